// The feature os-accounts in the Node runner, as conformance/tests/test_os_accounts.py tests the
// pytest plugin: roles made into OS accounts, `as:` steps, the static checks, the skip when not root.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dumpJson } from '../json.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CONFORMANCE = path.resolve(HERE, '..', '..');
const RUN = path.join(CONFORMANCE, 'node', 'run.mjs');
// an interpreter other accounts may run (root's own, e.g. under pyenv, may be out of their reach)
const PY = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : (process.env.PYTHON ?? 'python3');
const ROOT = process.geteuid() === 0;
// good_impl.py where other accounts can run it: a 0755 folder (this checkout may be in one only
// root can enter), the base interpreter without site-packages
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'node-accounts-test-'));
fs.chmodSync(TMP, 0o755);
fs.copyFileSync(path.join(CONFORMANCE, 'tests', 'good_impl.py'), path.join(TMP, 'good_impl.py'));
fs.chmodSync(path.join(TMP, 'good_impl.py'), 0o644);
const GOOD = `${PY} -S ${path.join(TMP, 'good_impl.py')}`;
let counter = 0;
after(() => fs.rmSync(TMP, { recursive: true, force: true }));

const ROLES = {
  id: 'accounts-roles',
  title: 'Each role is an OS account of its own, with its groups, sharing the repo',
  requirements: ['RUN-008'],
  features: ['core', 'os-accounts', 'jsonl'],
  accounts: ['a', 'b'],
  groups: { rtg: ['a'] },
  steps: [
    { name: "the runner's own account", run: ['debug', 'id'], expect: { json: { account: '${account}', umask: '0000' } } },
    { name: 'a, with the group rtg', as: 'a', run: ['debug', 'id'], expect: { json: { account: '${account_a}', groups: { $contains: ['${group_rtg}', '${account_a}'] }, umask: '0000' } } },
    { name: 'b is no member of rtg', as: 'b', run: ['debug', 'id'], expect: { json: { account: '${account_b}', groups: ['${account_b}'] } } },
    { name: 'a writes in the repo the runner made', as: 'a', run: ['workflow', 'run', 'hello', '--json'], expect: { json: { initiatedBy: '${account_a}', id: { $capture: 'runId' } } } },
    { files: [{ path: '.swamp/workflow-runs/hello/${runId}.json', mode: '0666' }] },
    {
      name: 'b reads it over --jsonl',
      as: 'b',
      jsonl: [{ type: 'debug.id', id: 'r1' }, { type: 'workflow.history.get', id: 'r2', payload: { run: '${runId}' } }],
      expect: { frames: [{ type: 'error', id: 'r1', error: { message: '${account_b}' } }, { type: 'workflow.history.get', id: 'r2', payload: { data: { initiatedBy: '${account_a}' } } }] },
    },
    { session: { args: ['--jsonl'], as: 'b' }, steps: [{ send: [{ type: 'debug.id', id: 's1' }] }, { expect: { frames: [{ type: 'error', id: 's1', error: { message: '${account_b}' } }] } }] },
  ],
};

function exportOf(scenarios) {
  counter += 1;
  const file = path.join(TMP, `export-${counter}.json`);
  const list = scenarios.map((s, i) => ({ file: `t/s${i}.yaml`, ...s }));
  fs.writeFileSync(file, dumpJson({ suiteVersion: '1.0.0', specVersion: '1.0.0', scenarios: list }));
  return file;
}

function run(scenarios, args, nodeArgs = []) {
  return new Promise((resolve) => {
    execFile('node', [...nodeArgs, RUN, '--impl', GOOD, '--scenarios', exportOf(scenarios), ...args], { cwd: TMP, maxBuffer: 1 << 24 },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, out: stdout + stderr }));
  });
}

const includes = (out, text) => assert.ok(out.includes(text), `missing ${JSON.stringify(text)} in:\n${out}`);
const digest = (record) => crypto.createHash('sha256').update(JSON.stringify(record)).digest('hex');

describe('os-accounts in the node runner', { concurrency: 2 }, () => {
  test('its scenarios are skipped unless selected, and by a runner that is not root, saying why', async () => {
    includes((await run([ROLES], [])).out, 'skip accounts-roles (needs feature(s) not selected: os-accounts)');
    const notRoot = await run([ROLES], ['--features', 'all,os-accounts'], ['--import', 'data:text/javascript,process.geteuid=()=>1000']);
    assert.equal(notRoot.code, 0, notRoot.out);
    includes(notRoot.out, 'skip accounts-roles (os-accounts needs root: the runner makes the OS accounts');
  });

  test('steps run as the accounts of their roles; the role is in the digest', { skip: !ROOT && 'needs root' }, async () => {
    const results = path.join(TMP, 'roles.json');
    const { code, out } = await run([ROLES], ['--features', 'all,os-accounts', '--results-json', results]);
    assert.equal(code, 0, out);
    const sent = Object.fromEntries(JSON.parse(fs.readFileSync(results, 'utf8')).scenarios['accounts-roles'].sent.map((s) => [s.step, s.sha256]));
    assert.equal(sent['steps[1] (run: a, with the group rtg)'], digest(['run', ['debug', 'id'], [], null, '', 'a']));
    assert.equal(sent["steps[0] (run: the runner's own account)"], digest(['run', ['debug', 'id'], [], null, '']));
  });

  test('a step that does not match names the setpriv command', { skip: !ROOT && 'needs root' }, async () => {
    const wrong = structuredClone(ROLES);
    wrong.steps[2].expect.json.account = '${account_a}';
    const { code, out } = await run([wrong], ['--features', 'all,os-accounts']);
    assert.equal(code, 1, out);
    includes(out, 'steps[2] (run: b is no member of rtg): json $.account: expected "swpr-a", got "swpr-b"');
    includes(out, 'command: setpriv --reuid=swpr-b --regid=swpr-b --init-groups -- ');
  });

  const broken = [
    ['as names an undeclared role', (s) => { s.steps[2].as = 'c'; }, "steps[2] (run: b is no member of rtg): as: 'c' is not an account of this scenario (accounts: a, b)"],
    ['a group member that is not an account', (s) => { s.groups.rtg = ['a', 'z']; }, 'groups.rtg: z is not in `accounts` (a, b)'],
    ['an unknown role capture', (s) => { s.steps[1].expect.json.groups = ['${group_zz}']; }, 'unknown capture(s) ${group_zz}'],
  ];
  for (const [name, change, message] of broken) {
    test(`roles are checked before anything runs: ${name}`, async () => {
      const scenario = structuredClone(ROLES);
      change(scenario);
      const { code, out } = await run([scenario], ['--features', 'all,os-accounts']);
      assert.equal(code, 2, out);
      includes(out, message);
    });
  }

  test('the runner connects to a socket that an account of the scenario serves', { skip: !ROOT && 'needs root' }, async () => {
    fs.copyFileSync(path.join(CONFORMANCE, 'tests', 'serve_impl.py'), path.join(TMP, 'serve_impl.py'));
    fs.chmodSync(path.join(TMP, 'serve_impl.py'), 0o644);
    // serve_impl answers its own request types (echo), not swamp's: frames only, as the session tests
    const schemas = path.join(TMP, 'schemas');
    fs.mkdirSync(schemas, { recursive: true });
    const frame = JSON.parse(fs.readFileSync(path.join(CONFORMANCE, '..', 'spec', 'schemas', 'frame.schema.json'), 'utf8'));
    delete frame.$defs.result.allOf;
    fs.writeFileSync(path.join(schemas, 'frame.schema.json'), JSON.stringify(frame));
    const served = {
      id: 'accounts-served', title: 'served', requirements: ['RUN-008'], features: ['core', 'os-accounts', 'serve', 'unix-socket'], accounts: ['svc'],
      steps: [{
        session: { args: ['serve', '--socket', 's.sock'], as: 'svc' },
        steps: [
          { connect: 's.sock', as: 'c' },
          { send: [{ type: 'echo', id: 'e1', payload: { n: 1 } }], to: 'c' },
          { expect: { frames: [{ type: 'echo', id: 'e1', payload: { data: { n: 1 } } }] }, from: 'c' },
        ],
      }],
    };
    const file = exportOf([served]);
    const { code, out } = await new Promise((resolve) => {
      execFile('node', [RUN, '--impl', `${PY} -S ${path.join(TMP, 'serve_impl.py')}`, '--scenarios', file, '--schemas', schemas, '--features', 'all,os-accounts'], { cwd: TMP },
        (error, stdout, stderr) => resolve({ code: error ? error.code : 0, out: stdout + stderr }));
    });
    assert.equal(code, 0, out);
  });

  test('a group has the same members in every scenario', async () => {
    const other = { ...structuredClone(ROLES), id: 'accounts-other', groups: { rtg: ['a', 'b'] } };
    const { code, out } = await run([ROLES, other], ['--features', 'all,os-accounts']);
    assert.equal(code, 2, out);
    includes(out, "groups.rtg: members [a, b], but scenario accounts-roles gives the group [a]; a group's members are the same in every scenario");
  });
});
