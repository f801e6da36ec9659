// The Node runner end to end, as conformance/tests/test_runner.py and test_sessions.py test the
// pytest runner: run.mjs runs small exports against the fake implementations in conformance/tests/.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dumpJson, parseJson } from '../json.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CONFORMANCE = path.resolve(HERE, '..', '..');
const RUN = path.join(CONFORMANCE, 'node', 'run.mjs');
const TESTS = path.join(CONFORMANCE, 'tests');
const SCHEMAS = path.join(CONFORMANCE, '..', 'spec', 'schemas');
const PY = process.env.PYTHON ?? 'python3';
const FAKE = `${PY} ${path.join(TESTS, 'fake_impl.py')}`;
const GOOD = `${PY} ${path.join(TESTS, 'good_impl.py')}`;
const SERVER = `${PY} ${path.join(TESTS, 'serve_impl.py')}`;
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'node-runner-test-'));
let counter = 0;
after(() => fs.rmSync(TMP, { recursive: true, force: true }));

/** The _selftest scenarios of the real export. */
function selftests() {
  const all = parseJson(fs.readFileSync(path.join(CONFORMANCE, 'scenarios.json'), 'utf8'));
  return all.scenarios.filter((s) => s.file.startsWith('_selftest/'));
}

function exportOf(scenarios) {
  counter += 1;
  const file = path.join(TMP, `export-${counter}.json`);
  const list = scenarios.map((s, i) => ({ file: s.file ?? `t/s${i}.yaml`, requirements: ['AB-001'], features: ['core'], ...s }));
  fs.writeFileSync(file, dumpJson({ suiteVersion: '1.0.0', specVersion: '1.0.0', scenarios: list }));
  return file;
}

function run(impl, scenarios, ...args) {
  const file = Array.isArray(scenarios) ? exportOf(scenarios) : scenarios;
  return new Promise((resolve) => {
    const started = Date.now();
    execFile('node', [RUN, '--impl', impl, '--scenarios', file, ...args], { cwd: TMP, env: { ...process.env, SWAMP_LEAK: 'from the runner' }, maxBuffer: 1 << 24 },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, out: stdout, err: stderr, seconds: (Date.now() - started) / 1000 }));
  });
}

const includes = (out, text) => assert.ok(out.includes(text), `missing ${JSON.stringify(text)} in:\n${out}`);

describe('the node runner', { concurrency: 4 }, () => {
  test('a wrong implementation fails the selftest scenarios readably', async () => {
    const { code, out } = await run(FAKE, exportOf(selftests()), '--include-selftest');
    assert.equal(code, 1, out);
    includes(out, '4 failed, 0 passed');
    assert.match(out, /steps\[0\] \(run\): exit code: expected 3, got 0 \(\+\d more\)\n  scenario: selftest-cli-error/);
    includes(out, 'fake_impl.py workflow history get run_missing --json');
    includes(out, '- exit code: expected 3, got 0');
    includes(out, '- json $.error: missing key');
    includes(out, 'stdout:\n  | {}');
    includes(out, '- expected frame [0] matched no actual frame');
    if (fs.existsSync(path.join(SCHEMAS, 'index.json'))) {
      // the document is checked against the schema of what it claims to be; so is a result frame's data
      includes(out, "- the --json document of `workflow history get` does not match results.schema.json#/$defs/workflow.history.get: 'formatVersion' is a required property (at /)");
      includes(out, "steps[0] (jsonl): frame #0 does not match frame.schema.json: 'formatVersion' is a required property (at /payload/data, checked as results.schema.json#/$defs/workflow.history.get)");
    }
    includes(out, 'expected frame [2] matched no actual frame: {"type": "error", "id": null');
    includes(out, 'no actual frame has id null');
    includes(out, '$.type: expected "error", got "workflow.history.get"');
    includes(out, '  | this line is not json');
    includes(out, '  #1 {"type": "done", "id": "r1"}');
    includes(out, 'steps[0] (run: start a run): json $.id: missing key');
    includes(out, 'LOGNAME=alice SWAMP_ACTOR=alice SWAMP_NOW=2026-01-01T00:00:00Z USER=alice');
    includes(out, 'repo dir (kept): ');
  });

  test('the right implementation passes, and the results file says so per scenario and feature', async () => {
    const results = path.join(TMP, 'good.json');
    const { code, out } = await run(GOOD, exportOf(selftests()), '--include-selftest', '--results-json', results);
    assert.equal(code, 0, out);
    includes(out, 'conformance impl: ');
    const doc = JSON.parse(fs.readFileSync(results, 'utf8'));
    assert.deepEqual(Object.values(doc.scenarios).map((s) => s.outcome), ['passed', 'passed', 'passed', 'passed']);
    assert.deepEqual(doc.featureTable['file-store'], { passed: 1, failed: 0, skipped: 0, verdict: 'passed' });
    assert.deepEqual(doc.featureTable.serve.verdict, 'not run');
  });

  test('selftests are left out without the option; features skip; a filter selects', async () => {
    const file = exportOf(selftests());
    assert.equal((await run(GOOD, file)).code, 2);
    const results = path.join(TMP, 'skip.json');
    const skipped = await run(GOOD, file, '--include-selftest', '--features', 'core', '--results-json', results);
    assert.equal(skipped.code, 0, skipped.out);
    includes(skipped.out, 'skip selftest-roundtrip (needs feature(s) not selected: file-store, jsonl)');
    assert.equal(JSON.parse(fs.readFileSync(results, 'utf8')).scenarios['selftest-roundtrip'].outcome, 'skipped');
    const one = await run(GOOD, file, '--include-selftest', '--filter', 'SELFTEST-002');
    includes(one.out, '0 failed, 1 passed, 0 skipped');
    assert.equal((await run(GOOD, file, '--features', 'nope')).code, 2);
  });

  test('relative impl paths are taken from where the runner started', async () => {
    fs.copyFileSync(path.join(TESTS, 'good_impl.py'), path.join(TMP, 'impl.py'));
    const { code, out } = await run(`${PY} ./impl.py`, exportOf(selftests()), '--include-selftest');
    assert.equal(code, 0, out);
  });

  test('the environment contract', async () => {
    const { code, out } = await run(GOOD, [{
      id: 'env-contract', title: 'clean env', env: { SWAMP_NOW: '2026-01-01T00:00:00Z' },
      steps: [
        { run: ['debug', 'env'], stdin: 'literal $${x}', expect: { json: {
          env: { SWAMP_LEAK: { $absent: true }, SWAMP_NOW: '2026-01-01T00:00:00Z', USER: 'conformance', LOGNAME: 'conformance',
            NO_COLOR: '1', TERM: 'dumb', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', HOME: { $regex: '/home$', $capture: 'home' },
            PATH: { $type: 'string' }, SWAMP_ACTOR: { $absent: true } },
          cwd: { $regex: '/repo$' }, user: 'conformance', stdin: 'literal $${x}' } } },
        { run: ['debug', 'env'], user: 'bob', env: { TERM: null, COUNT: 3, SWAMP_NOW: '2027-01-01T00:00:00Z' },
          expect: { json: { env: { TERM: { $absent: true }, COUNT: '3', HOME: '${home}', USER: 'bob', SWAMP_ACTOR: 'bob' } } } },
        { run: ['debug', 'env'], stdin: '${account}', expect: { json: { stdin: os.userInfo().username } } },
        { files: [{ path: '.swamp.yaml' }] },
      ],
    }]);
    assert.equal(code, 0, out);
  });

  test('a timeout kills the process group and fails clearly', async () => {
    const { code, out, seconds } = await run(GOOD, [{ id: 'slow', title: 'slow', init: false, steps: [{ run: ['debug', 'sleep', '30'], timeout: 0.5 }] }]);
    assert.equal(code, 1);
    includes(out, 'timed out after 0.5 s waiting for the process to finish (the process was killed)');
    assert.ok(seconds < 15);
  });

  test('a missing implementation is a clear failure', async () => {
    const { code, out } = await run('/nonexistent/swamp-impl', exportOf(selftests()), '--include-selftest', '--filter', 'SELFTEST-001');
    assert.equal(code, 1);
    includes(out, "could not start the implementation '/nonexistent/swamp-impl repo init .'");
  });

  test('frames are validated against the frame schema', async () => {
    const impl = path.join(TMP, 'bad_frames.py');
    fs.writeFileSync(impl, [
      'import json, sys', 'sys.stdin.read()',
      'print(json.dumps({"type": "done", "id": "r1", "extra": 1}))',
      'print(json.dumps({"type": "error", "id": "r1", "error": {"code": "Bad-Code", "message": "x"}}))',
      "print('not json')", '',
    ].join('\n'));
    const { code, out } = await run(`${PY} ${impl}`, [{ id: 'frames', title: 'f', init: false, steps: [{ jsonl: [{ type: 'workflow.list', id: 'r1' }] }] }]);
    assert.equal(code, 1);
    includes(out, 'frame #0 does not match frame.schema.json: Additional properties');
    includes(out, 'checked as frame.schema.json#/$defs/done');
    includes(out, "frame #1 does not match frame.schema.json: 'Bad-Code'");
    includes(out, '(at /error/code, checked as ');
    includes(out, 'stdout line 3 is not a JSON frame');
    includes(out, '  !! not json');
  });

  test('a files step failure lists the repo', async () => {
    const { code, out } = await run(GOOD, [{
      id: 'files', title: 'f', files: { 'workflows/workflow-a.yaml': 'name: a\n', 'run.sh': 'echo $${HOME}', 'plain.txt': 'x' },
      steps: [
        { files: [{ path: 'run.sh', text: 'echo $${HOME}' }, { glob: 'workflows/*.yaml', count: 2 },
          { path: 'workflows/workflow-a.yaml', text: { $contains: 'name: b' } }, { path: 'nothing.json', json: {} },
          { path: 'plain.txt', mode: '0600' }] },
      ],
    }]);
    assert.equal(code, 1, out);
    assert.ok(!out.includes('- files[0]'), out);
    includes(out, "- files[1] glob 'workflows/*.yaml': expected count 2, got 1: ['workflows/workflow-a.yaml']");
    includes(out, '- files[2] workflows/workflow-a.yaml text: expected a string containing "name: b"');
    includes(out, "- files[3] path 'nothing.json': expected it to exist");
    includes(out, 'files[4] plain.txt: expected mode 0600, got 0644');
    includes(out, 'files in the repo dir:\n  | .swamp.yaml');
  });

  test('with spec/schemas/index.json every --json output and mapped file is validated', async () => {
    const dir = path.join(TMP, 'schemas');
    fs.mkdirSync(dir, { recursive: true });
    for (const name of fs.readdirSync(SCHEMAS)) if (name.endsWith('.schema.json')) fs.copyFileSync(path.join(SCHEMAS, name), path.join(dir, name));
    const write = (name, doc) => fs.writeFileSync(path.join(dir, name), JSON.stringify(doc));
    const who = { type: 'string', pattern: '^[a-z]+$' };
    write('mine.schema.json', { $id: 'mine.schema.json', $defs: {
      run: { type: 'object', required: ['id', 'status'], properties: { status: { enum: ['succeeded'] } } },
      record: { type: 'object', required: ['id'], properties: { startedBy: who, onBehalfOf: who } },
      errorDocument: { type: 'object', required: ['error'], properties: { error: { type: 'object', required: ['code', 'message'] } } },
    } });
    write('index.json', {
      frame: 'frame.schema.json',
      errorDocument: 'mine.schema.json#/$defs/errorDocument',
      commands: { 'workflow run': 'mine.schema.json#/$defs/run', 'workflow history get': 'mine.schema.json#/$defs/record' },
      files: [{ glob: '.swamp/workflow-runs/*/*.json', schema: 'mine.schema.json#/$defs/record' }],
    });
    const good = {
      id: 'documents', title: 'd', env: { SWAMP_NOW: 'now' },
      steps: [
        { run: ['workflow', 'run', 'hello', '--json'], expect: { json: { id: { $capture: 'runId' } } } },
        { run: ['workflow', 'history', 'get', '${runId}', '--json'] },
        { run: ['workflow', 'history', 'get', 'nope', '--json'], expect: { exit: 3 } },
        { files: [{ glob: '.swamp/workflow-runs/**/*.json', count: 1 }] },
      ],
    };
    const passed = await run(GOOD, [good], '--schemas', dir);
    assert.equal(passed.code, 0, passed.out);
    const dir2 = path.join(TMP, 'schemas2');
    fs.cpSync(dir, dir2, { recursive: true });
    const index = JSON.parse(fs.readFileSync(path.join(dir, 'index.json'), 'utf8'));
    delete index.commands['workflow run'];
    fs.writeFileSync(path.join(dir2, 'index.json'), JSON.stringify(index));
    const unmapped = await run(GOOD, [{ ...good, id: 'unmapped', steps: [{ run: ['workflow', 'run', 'hello', '--json'] }] }], '--schemas', dir2);
    assert.equal(unmapped.code, 1, unmapped.out);
    includes(unmapped.out, 'no schema for the output of `workflow run hello`: index.json has no `commands` entry for it');
    const badRecord = { ...good, id: 'bad-record', steps: [{ ...good.steps[0], user: 'Bad Name' }, good.steps[3]] };
    const ownRecord = { ...good, id: 'own-record', steps: [good.steps[0], { write: { '.swamp/workflow-runs/hello/run_0001.json': { id: 'x', startedBy: 'Bad Name' } } }, good.steps[3]] };
    const badOutput = { ...good, id: 'bad-output', steps: [{ run: ['workflow', 'run', 'hello', '--json'], user: 'Alice' }, { run: ['workflow', 'history', 'get', 'run_0001', '--json'], user: 'Alice' }] };
    const failed = await run(GOOD, [badRecord, badOutput, ownRecord], '--schemas', dir);
    assert.equal(failed.code, 1, failed.out);
    includes(failed.out, 'ok   own-record'); // a file holding what the scenario wrote is not checked
    assert.match(failed.out, /files\[0\] \.swamp\/workflow-runs\/hello\/run_0001\.json: does not match mine\.schema\.json#\/\$defs\/record: 'Bad Name' does not match '\^\[a-z\]\+\$' \(at \/(startedBy|onBehalfOf)\)/);
    assert.match(failed.out, /steps\[1\] \(run\): the --json document of `workflow history get` does not match mine\.schema\.json#\/\$defs\/record: 'Alice' does not match '\^\[a-z\]\+\$' \(at \/(startedBy|onBehalfOf)\)/);
  });

  test('broken scenarios stop the run with exit 2, naming the file and the problem', async () => {
    const cases = [
      [{ id: 'x', title: 't', requirements: ['A-001'], steps: [{ run: ['a'] }] }, "'A-001' does not match"],
      [{ id: 'x', title: 't', steps: [{ run: ['a'], expect: { exits: 0 } }] }, "'exits' was unexpected"],
      [{ id: 'x', title: 't', steps: [{ run: ['a'], files: [] }] }, 'exactly one of `run`'],
      [{ id: 'x', title: 't', steps: [{ run: ['${nope}'] }] }, 'unknown capture(s) ${nope}'],
      [{ id: 'x', title: 't', steps: [{ run: ['a'], expect: { json: { $regexp: 'a' } } }] }, 'unknown matcher'],
      [{ id: 'x', title: 't', steps: [{ run: ['a'], expect: { stdout: { a: 1 } } }] }, 'got an object'],
      [{ id: 'x', title: 't', steps: [{ write: { '../out': 'x' } }] }, 'must be a relative path'],
      [{ id: 'x', title: 't', steps: [{ run: ['a'], expect: { stdout: { $regex: '(?s)a.b' } } }] }, 'invalid regular expression'],
      [{ id: 'x', title: 't', steps: [{ session: { args: ['serve'] }, steps: [{ send: [], to: 'a' }] }] }, "to: 'a' is not an open channel of this session"],
      [{ id: 'x', title: 't', steps: [{ session: { args: ['serve'] }, steps: [{ drop: 'stdio' }] }] }, 'drop takes a connection'],
      [{ id: 'x', title: 't', steps: [{ session: { args: ['serve'] }, steps: [{ connect: 's', as: 'a' }, { drop: 'a' }, { close: 'a' }] }] }, "close: 'a' is not an open channel"],
      [{ id: 'x', title: 't', steps: [{ session: { args: ['serve'] }, steps: [{ connect: 's', as: 'stdio' }] }] }, 'steps[0].steps[0].as'],
      [{ id: 'x', title: 't', steps: [{ session: { args: ['serve'] }, steps: [{ session: { args: [] }, steps: [{ sleep: 1 }] }] }] }, 'sessions cannot be nested'],
      [{ id: 'x', title: 't', steps: [{ session: { args: ['serve'] }, steps: [{ signal: 'STOPPLEASE' }] }] }, "'STOPPLEASE' is not one of"],
      [{ id: 'x', title: 't', steps: [{ session: { args: ['serve'] }, steps: [{ expect: {} }] }] }, 'should be non-empty'],
      [{ id: 'x', title: 't', steps: [{ session: { args: ['serve'] }, steps: [{ connect: '../s', as: 'a' }] }] }, 'must be a relative path'],
    ];
    const results = await Promise.all(cases.map(([scenario]) => run(GOOD, [{ file: 'broken.yaml', ...scenario }])));
    results.forEach(({ code, out }, i) => {
      assert.equal(code, 2, out);
      includes(out, 'broken scenario conformance/scenarios/broken.yaml');
      includes(out, cases[i][1]);
    });
  });

  test('captures flow between steps in order; raw pieces', async () => {
    const { code, out } = await run(GOOD, [{
      id: 'order', title: 'o', features: ['core'],
      steps: [
        { run: ['workflow', 'run', 'a', '--json'], expect: { json: { id: { $capture: 'first' } } } },
        { run: ['workflow', 'run', 'b', '--json'], expect: { json: { id: { $not: '${first}' }, workflowName: 'b' } } },
        { run: ['workflow', 'history', 'get', '${first}', '--json'], expect: { json: { workflowName: 'a' } } },
        { jsonl: [], raw: [{ repeat: 'x', times: 5 }, '\n'], expect: { frames: [{ type: 'error', id: null }] } },
      ],
    }]);
    assert.equal(code, 0, out);
  });
});

/** serve_impl.py speaks the frames' protocol with its own request types (echo, sleep), not swamp's:
 * its schemas folder holds a frame schema without the per-type documents, and no index. */
function looseSchemas() {
  const dir = path.join(TMP, 'loose-schemas');
  if (!fs.existsSync(dir)) {
    fs.mkdirSync(dir, { recursive: true });
    const frame = JSON.parse(fs.readFileSync(path.join(SCHEMAS, 'frame.schema.json'), 'utf8'));
    delete frame.$defs.result.allOf;
    frame.$defs.event.properties.event = { type: 'object' };
    frame.$defs.errorBody = { type: 'object', required: ['code', 'message'] };
    fs.writeFileSync(path.join(dir, 'frame.schema.json'), JSON.stringify(frame));
  }
  return ['--schemas', dir];
}

describe('sessions', { concurrency: 4 }, () => {
  test('a session keeps one process across exchanges', async () => {
    const { code, out } = await run(SERVER, [{
      id: 'session-roundtrip', title: 'r',
      steps: [
        { session: { args: ['serve', '--socket', 's.sock'], env: { MARK: '1' } },
          steps: [
            { send: [{ type: 'sleep', id: 'r1', payload: { seconds: 1 } }, { type: 'echo', id: 'r2', payload: { n: 2 } }] },
            { expect: { only: true, frames: [{ type: 'echo', id: 'r2', payload: { data: { n: { $capture: 'two' } } } }, { type: 'done', id: 'r2' }] } },
            { run: ['count'], expect: { json: { files: { $type: 'integer' } } } },
            { expect: { frames: [{ type: 'sleep', id: 'r1', payload: { data: { seconds: 1 } } }, { type: 'done', id: 'r1' }], only: true } },
            { connect: 's.sock', as: 'a' },
            { connect: 's.sock', as: 'b' },
            { send: [{ type: 'echo', id: 'r1', payload: { from: 'a', n: '${two}' } }], to: 'a' },
            { send: [{ type: 'echo', id: 'r1', payload: { from: 'b' } }], to: 'b' },
            { expect: { frames: [{ type: 'echo', id: 'r1', payload: { data: { from: 'b' } } }], only: false }, from: 'b' },
            { expect: { frames: [{ type: 'echo', id: 'r1', payload: { data: { from: 'a', n: 2 } } }] }, from: 'a' },
            { send: [{ type: 'touch', id: 't1', payload: { path: 'made.txt', after: 0.3 } }], to: 'a' },
            { files: [{ path: 'made.txt', text: 'touched\n' }], timeout: 10 },
            { close: 'stdio' },
            { sleep: 0.2 },
            { send: [{ type: 'log', id: 'l1', payload: { text: 'still here' } }], to: 'b' },
            { expect: { stderr: { $contains: 'still here' } } },
            { signal: 'TERM' },
            { expect: { exit: 0, stderr: { $contains: 'stopping on signal 15' } } },
          ] },
        { files: [{ path: 's.sock', exists: false }] },
        { run: ['count'], expect: { json: { files: '${two}' } } },
      ],
    }], ...looseSchemas());
    assert.equal(code, 0, out);
  });

  test('an expect that never holds fails after its timeout with the channel shown', async () => {
    const { code, out } = await run(SERVER, [{
      id: 'session-timeout', title: 't',
      steps: [{ session: { args: ['serve'] }, steps: [
        { send: [{ type: 'echo', id: 'r1', payload: { n: 1 } }] },
        { expect: { frames: [{ type: 'echo', id: 'r1' }] } },
        { expect: { frames: [{ type: 'echo', id: 'r9' }] }, timeout: 0.5 },
      ] }],
    }], ...looseSchemas());
    assert.equal(code, 1);
    includes(out, 'steps[0].steps[2] (expect): expected frame [0] matched no actual frame: {"type": "echo", "id": "r9"}');
    includes(out, 'serve_impl.py serve');
    includes(out, '  session process: still running');
    includes(out, 'no actual frame has id "r9"');
    includes(out, 'waited on stdio: still not so after 0.5 s (a sub-step may set `timeout:`)');
    includes(out, 'sent on stdio:\n  | {"type": "echo", "id": "r1", "payload": {"n": 1}}');
    includes(out, '  #0* {"type": "echo", "id": "r1", "payload": {"data": {"n": 1}}}');
    includes(out, 'session stderr:\n  | ready');
  });

  test('exit codes, signals, garbage lines, taken frames and a session left running', async () => {
    const session = (id, args, steps, after = []) => ({ id, title: id, file: `${id}.yaml`, steps: [{ session: { args }, steps }, ...after] });
    const { code, out, seconds } = await run(SERVER, [
      session('ended', ['serve'], [{ close: 'stdio' }, { expect: { frames: [{ type: 'echo', id: 'r1' }] }, timeout: 60 }]),
      session('exit', ['serve', '--socket', 's.sock', '--exit-code', '3'], [{ expect: { stderr: { $contains: 'ready' } } }, { signal: 'INT' }, { expect: { exit: 0 } }]),
      session('after', ['serve'], [{ close: 'stdio' }, { expect: { exit: 0 } }, { signal: 'TERM' }]),
      session('garbage', ['serve'], [{ send: [{ type: 'garbage', id: 'g1' }] }, { expect: { frames: [{ type: 'garbage', id: 'g1' }] }, timeout: 30 }]),
      session('taken', ['serve'], [{ send: [{ type: 'echo', id: 'r1' }, { type: 'echo', id: 'r2' }] }, { expect: { frames: [{ type: 'done', id: 'r1' }, { type: 'done', id: 'r2' }] } }, { expect: { frames: [{ type: 'done', id: 'r1' }] }, timeout: 0.3 }]),
      session('only', ['serve'], [{ send: [{ type: 'echo', id: 'r1' }, { type: 'echo', id: 'r2' }] }, { expect: { frames: [{ type: 'echo', id: 'r1' }, { type: 'done', id: 'r1' }, { type: 'done', id: 'r2' }] } }, { expect: { frames: [], only: true }, timeout: 0.3 }]),
      session('left-running', ['serve', '--socket', 's.sock'], [{ connect: 's.sock', as: 'a' }], [{ files: [{ path: 's.sock', exists: false }] }]),
    ], '--jobs', '4', ...looseSchemas());
    assert.equal(code, 1, out);
    includes(out, '6 failed, 1 passed');
    includes(out, 'ok   left-running');
    includes(out, 'nothing more can arrive (the process has ended and the channel is closed)');
    includes(out, '  session process: exited with code 0');
    includes(out, 'steps[0].steps[2] (expect): exit code: expected 0, got 3');
    includes(out, 'steps[0].steps[2] (signal): signal TERM: the process has already exited (exit code 0)');
    includes(out, 'stdio: line 1 is not a JSON frame');
    includes(out, '  !! this is not json');
    includes(out, 'steps[0].steps[2] (expect): expected frame [0] matched no actual frame');
    includes(out, 'was not expected (only: true): {"type": "echo", "id": "r2", "payload": {"data": {}}}');
    assert.ok(seconds < 30);
  });
});

describe('--env-hook', { concurrency: 4 }, () => {
  // as test_runner.py's env-hook tests: an implementation that shows its environment everywhere
  const impl = path.join(TMP, 'env_impl.py');
  const ENV_IMPL = [
    'import json, os, sys',
    "lines = ''.join(f'{k}={v}\\n' for k, v in sorted(os.environ.items()))",
    "if sys.argv[1:] == ['repo', 'init', '.']:",
    "    open('init-env.txt', 'w').write(lines)",
    "elif sys.argv[1:] == ['--jsonl']:",
    "    error = {'code': 'invalid_request', 'message': os.environ.get('HOOKED', '-')}",
    "    print(json.dumps({'type': 'error', 'id': None, 'error': error}))",
    "    print(json.dumps({'type': 'done', 'id': None}))",
    "elif sys.argv[1:] == ['serve']:",
    '    sys.stderr.write(lines)',
    'else:',
    '    sys.stdout.write(lines)',
    '',
  ].join('\n');
  const hooked = {
    id: 'hooked', title: 'the hook reaches every process', env: { OVERRIDE: 'scenario' },
    steps: [
      { files: [{ path: 'init-env.txt', text: { $contains: 'HOOKED=yes a=b\n' } }] },
      { run: ['env'], expect: { stdout: { $contains: 'HOOKED=yes a=b\n',
        $regex: '(^|\\n)SCENARIO=hooked\\n[\\s\\S]*STORE=postgresql:///s\\?options=-csearch_path%3Dc_x\\n' } } },
      { run: ['env'], expect: { stdout: { $contains: 'FROM_RUNNER=from the runner\n', $regex: '(^|\\n)OVERRIDE=scenario\\n' } } },
      { jsonl: [], expect: { frames: [{ type: 'error', error: { message: 'yes a=b' } }, { type: 'done' }] } },
      { session: { args: ['serve'] }, steps: [{ expect: { exit: 0, stderr: { $contains: 'HOOKED=yes a=b\n' } } }] },
    ],
  };
  const hook = (name, body) => {
    fs.writeFileSync(path.join(TMP, name), `#!/bin/sh\n${body}`, { mode: 0o755 });
    return `./${name}`;
  };
  fs.writeFileSync(impl, ENV_IMPL);

  test("the hook's variables reach every process of the scenario; the scenario's env wins", async () => {
    const good = hook('good-hook.sh', 'echo "HOOKED=yes a=b"; echo; echo "SCENARIO=$1"; echo "OVERRIDE=hook"\n'
      + 'echo "STORE=postgresql:///s?options=-csearch_path%3Dc_x"; echo "FROM_RUNNER=$SWAMP_LEAK"\n');
    const withHook = await run(`${PY} ${impl}`, [hooked], '--env-hook', good);
    assert.equal(withHook.code, 0, withHook.out);
    const without = await run(`${PY} ${impl}`, [hooked]);
    assert.equal(without.code, 1, without.out);
    includes(without.out, 'files[0] init-env.txt text: expected a string containing "HOOKED=yes a=b');
  });

  for (const [name, body, message] of [
    ['exits', "echo 'no cluster at /x' >&2; exit 3\n", 'exited 3; its stderr:\n  | no cluster at /x'],
    ['garbles', "echo HOOKED=yes; echo 'not a variable'\n", "line 2 of its stdout is not NAME=VALUE: 'not a variable'"],
  ]) {
    test(`a hook that ${name} fails the scenario before anything runs`, async () => {
      const marker = path.join(TMP, `ran-${name}`);
      const counting = path.join(TMP, `env_impl_${name}.py`);
      fs.writeFileSync(counting, `open(${JSON.stringify(marker)}, 'a').write('ran')\n${ENV_IMPL}`);
      const { code, out } = await run(`${PY} ${counting}`, [hooked], '--env-hook', hook(`${name}.sh`, body));
      assert.equal(code, 1, out);
      includes(out, `env hook: the environment hook \`${path.join(TMP, `${name}.sh`)} hooked\``);
      includes(out, message);
      includes(out, 'nothing of the scenario ran');
      assert.ok(!fs.existsSync(marker), 'the implementation ran');
    });
  }

  test('postgresql-store scenarios run only when --features names it', async () => {
    const pg = [{ id: 'pg-only', title: 'pg', features: ['core', 'postgresql-store'], init: false, steps: [{ run: ['debug', 'sleep', '0'] }] }];
    const byDefault = await run(GOOD, pg);
    assert.equal(byDefault.code, 0, byDefault.out);
    includes(byDefault.out, 'skip pg-only (needs feature(s) not selected: postgresql-store)');
    const chosen = await run(GOOD, pg, '--features', 'core,postgresql-store');
    includes(chosen.out, '0 failed, 1 passed, 0 skipped');
    const everything = await run(GOOD, [...pg, ...selftests()], '--include-selftest', '--features', 'all,postgresql-store');
    includes(everything.out, '0 failed, 5 passed, 0 skipped'); // `all`: jsonl and file-store of the selftests too
  });
});

describe('scripts/compare-runners', () => {
  test('agrees on equal outcomes and lists every difference id by id', async () => {
    const script = path.join(CONFORMANCE, '..', 'scripts', 'compare-runners');
    const file = (name, scenarios) => {
      const p = path.join(TMP, name);
      fs.writeFileSync(p, JSON.stringify({ impl: 'x', features: ['core'], scenarios, featureTable: {} }));
      return p;
    };
    const s = (outcome) => ({ outcome, features: ['core'] });
    const compare = (a, b) => new Promise((resolve) => {
      execFile(PY, [script, '--pytest-results', a, '--node-results', b], (error, stdout) => resolve({ code: error ? error.code : 0, report: JSON.parse(stdout) }));
    });
    const a = file('a.json', { one: s('passed'), two: s('failed'), three: s('skipped') });
    const same = await compare(a, file('b.json', { three: s('skipped'), one: s('passed'), two: s('failed') }));
    assert.deepEqual(same, { code: 0, report: { agree: true, scenarios: 3, differences: [], sentDifferences: [] } });
    const other = await compare(a, file('c.json', { one: s('failed'), two: s('failed'), four: s('passed') }));
    assert.equal(other.code, 1);
    assert.deepEqual(other.report, { agree: false, scenarios: 4, differences: [
      { id: 'four', pytest: 'absent', node: 'passed' },
      { id: 'one', pytest: 'passed', node: 'failed' },
      { id: 'three', pytest: 'skipped', node: 'absent' },
    ], sentDifferences: [] });
  });

  test('names the first step whose digest of what it sent differs', async () => {
    const script = path.join(CONFORMANCE, '..', 'scripts', 'compare-runners');
    const results = path.join(TMP, 'sent-node.json');
    const { code, out } = await run(GOOD, exportOf(selftests()), '--include-selftest', '--id', 'selftest-same-bytes', '--results-json', results);
    assert.equal(code, 0, out);
    const doc = JSON.parse(fs.readFileSync(results, 'utf8'));
    const sent = doc.scenarios['selftest-same-bytes'].sent;
    assert.deepEqual(sent.map((s) => s.step), ['files', 'steps[0] (run)', 'steps[1] (run)', 'steps[3] (jsonl)']);
    const changed = structuredClone(doc);
    changed.scenarios['selftest-same-bytes'].sent[2].sha256 = '0'.repeat(64);
    const other = path.join(TMP, 'sent-other.json');
    fs.writeFileSync(other, JSON.stringify(changed));
    const report = await new Promise((resolve) => {
      execFile(PY, [script, '--pytest-results', other, '--node-results', results], (error, stdout) => resolve(JSON.parse(stdout)));
    });
    assert.deepEqual(report.sentDifferences, [{ id: 'selftest-same-bytes', step: 'steps[1] (run)', pytest: '0'.repeat(64), node: sent[2].sha256 }]);
  });
});

describe('selection', () => {
  const ids = (out) => [...out.matchAll(/^(?:ok  |FAIL) (\S+)$/gm)].map((m) => m[1]).sort();

  test('--id takes exact ids, --folder a folder, --exclude leaves out an id or a folder', async () => {
    const file = exportOf(selftests());
    const byId = await run(GOOD, file, '--include-selftest', '--id', 'selftest-roundtrip,selftest-cli-error-shape');
    assert.deepEqual(ids(byId.out), ['selftest-cli-error-shape', 'selftest-roundtrip']);
    const folder = await run(GOOD, file, '--include-selftest', '--folder', '_selftest', '--exclude', 'selftest-same-bytes');
    assert.deepEqual(ids(folder.out), ['selftest-cli-error-shape', 'selftest-jsonl-invalid-request', 'selftest-roundtrip']);
    const repeated = await run(GOOD, file, '--include-selftest', '--id', 'selftest-roundtrip', '--id', 'selftest-same-bytes', '--exclude', 'selftest-roundtrip');
    assert.deepEqual(ids(repeated.out), ['selftest-same-bytes']);
    const none = await run(GOOD, file, '--include-selftest', '--exclude', '_selftest');
    assert.equal(none.code, 2);
    includes(none.out, 'no scenarios selected');
  });

  test('a name that matches no scenario is a usage error; --filter still matches substrings', async () => {
    const file = exportOf(selftests());
    const unknown = await run(GOOD, file, '--include-selftest', '--id', 'roundtrip', '--folder', '_self');
    assert.equal(unknown.code, 2);
    includes(unknown.err, '--id roundtrip: no scenario has this id; --folder _self: no scenario is under this folder');
    const filter = await run(GOOD, file, '--include-selftest', '--filter', 'roundtrip');
    assert.deepEqual(ids(filter.out), ['selftest-roundtrip']);
  });
});
