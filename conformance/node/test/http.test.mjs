// `http` steps in the Node runner, as conformance/tests/test_http_step.py tests the pytest runner:
// the scenarios of conformance/tests/http_scenarios.json against http_impl.py, an HTTP echo that
// answers with the bytes it received, and failures that show both sides.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { formText } from '../http.mjs';
import { dumpJson, parseJson } from '../json.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CONFORMANCE = path.resolve(HERE, '..', '..');
const RUN = path.join(CONFORMANCE, 'node', 'run.mjs');
const PY = process.env.PYTHON ?? 'python3';
const IMPL = `${PY} ${path.join(CONFORMANCE, 'tests', 'http_impl.py')}`;
const SCENARIOS = parseJson(fs.readFileSync(path.join(CONFORMANCE, 'tests', 'http_scenarios.json'), 'utf8'));
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'node-http-test-'));
let counter = 0;
after(() => fs.rmSync(TMP, { recursive: true, force: true }));

function run(scenarios, ...args) {
  counter += 1;
  const file = path.join(TMP, `export-${counter}.json`);
  const list = scenarios.map((s, i) => ({ file: `t/s${i}.yaml`, ...s }));
  fs.writeFileSync(file, dumpJson({ suiteVersion: '1.0.0', specVersion: '1.0.0', scenarios: list }));
  return new Promise((resolve) => {
    execFile('node', [RUN, '--impl', IMPL, '--scenarios', file, ...args], { cwd: TMP, maxBuffer: 1 << 24 },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, out: stdout + stderr }));
  });
}

const includes = (out, text) => assert.ok(out.includes(text), `missing ${JSON.stringify(text)} in:\n${out}`);

function gateway(...steps) {
  return {
    id: 'http-fails', title: 'an http step', requirements: ['AB-001'], features: ['core', 'gateway'],
    steps: [{ session: { args: ['gateway', '--listen', '127.0.0.1:0'], stdout: 'json' },
      steps: [{ expect: { frames: [{ listening: { $capture: 'base' } }] } }, ...steps] }],
  };
}

describe('http steps in the node runner', { concurrency: 2 }, () => {
  test('what an http step sends, and how its answer matches', async () => {
    const { code, out } = await run(SCENARIOS);
    assert.equal(code, 0, out);
    includes(out, `0 failed, ${SCENARIOS.length} passed`);
  });

  test('a status other than 2xx fails unless expected; the report shows both sides', async () => {
    const { code, out } = await run([gateway({ http: { url: '${base}/x?status=503' } })]);
    assert.equal(code, 1, out);
    includes(out, 'steps[0].steps[1] (http): status: expected a 2xx status (the step may set `expect.status`), got 503');
    includes(out, 'request: GET http://127.0.0.1:');
    includes(out, 'response: 503 Echo');
    includes(out, '  | X-Twice: two');
    includes(out, 'the body of a 503 answer does not match errors.schema.json#/$defs/errorDocument');
  });

  test('nothing listening is a readable failure', async () => {
    const s = { ...gateway(), steps: [{ http: { url: 'http://127.0.0.1:9/x' }, timeout: 5 }] };
    const { code, out } = await run([s]);
    assert.equal(code, 1, out);
    includes(out, 'steps[0] (http): ECONNREFUSED');
  });

  test('two expected headers that differ only in case are a broken scenario', async () => {
    const { out } = await run([gateway({ http: { url: '${base}/x' }, expect: { headers: { A: '1', a: '2' } } })]);
    includes(out, "'A' and 'a' name the same header");
  });

  test('form fields are encoded as Python quote_plus does', () => {
    assert.equal(formText({ a: 'x y', 'b~*': ['1', 2, true], 'é': '&=' }), 'a=x+y&b~%2A=1&b~%2A=2&b~%2A=true&%C3%A9=%26%3D');
  });
});
