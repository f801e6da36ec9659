// Unit tests of the Node runner's pieces: the JSON Schema validator (against the real
// frame.schema.json), the portable regex subset, globs, shell words and matching.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Documents } from '../documents.mjs';
import { sentDigest } from '../execute.mjs';
import { dumpJson, floatRepr, parseJson } from '../json.mjs';
import { glob, globRegExp } from '../glob.mjs';
import { assignFrames, match, substitute } from '../matching.mjs';
import { compilePortable, RegexError, search } from '../regex.mjs';
import { bestError, Registry } from '../schema.mjs';
import { shlexJoin, shlexSplit } from '../text.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SCHEMAS = path.join(ROOT, 'spec', 'schemas');
const registry = Registry.fromDir(SCHEMAS);
const frame = registry.validator('frame.schema.json');
const request = registry.validator('frame.schema.json#/$defs/request');

test('valid frames pass frame.schema.json', () => {
  for (const f of [
    { type: 'event', id: 'r1', event: { event: 'step_started', at: '2026-01-01T00:00:00.000Z', job: 'main', step: 'build', task: 'model_method' } },
    { type: 'workflow.create', id: 'r1', payload: { data: { name: 'hello', path: 'workflows/x' } } },
    { type: 'workflow.waits', id: 'r2', payload: { data: { waits: [] } } },
    { type: 'error', id: 'r1', error: { code: 'payload_invalid', message: 'm', details: { errors: [{ pointer: '/a', message: 'm' }] } } },
    { type: 'error', id: null, error: { code: 'invalid_request', message: 'Line 1 is not JSON.' } },
    { type: 'done', id: 'r1' },
    { type: 'done', id: null },
  ]) assert.deepEqual(frame(f), [], JSON.stringify(f));
});

test('invalid frames fail frame.schema.json', () => {
  for (const f of [
    [],
    { type: 'done' },
    { type: 'done', id: 'r1', extra: true },
    { type: 'done', id: 1 },
    { type: 'event', id: 'r1' },
    { type: 'event', id: null, event: {} },
    { type: 'workflow.signal', id: 'r1', payload: {} },
    { type: 'workflow.signal', id: 'r1', payload: { data: [] } },
    { type: 'workflow.signal', id: 'r1', payload: { data: {}, more: 1 } },
    { type: 'Workflow.Signal', id: 'r1', payload: { data: {} } },
    { type: 'error', id: 'r1', payload: { data: {} } },
    { type: 'error', id: 'r1', error: { code: 'WaitNotFound', message: 'm' } },
    { type: 'error', id: 'r1', error: { code: 'wait_not_found' } },
    { type: 'error', id: 'r1', error: { code: 'wait_not_found', message: 'two\nlines' } },
    { type: 'error', id: 'r1', error: { code: 'wait_not_found', message: 'm', details: null } },
  ]) assert.notDeepEqual(frame(f), [], JSON.stringify(f));
  assert.deepEqual(request({ type: 'workflow.list', id: 'r1' }), []);
  assert.notDeepEqual(request({ type: 'done', id: 'r1' }), []);
  assert.notDeepEqual(frame({ type: 'workflow.signal', id: 'r1', payload: { wait: 'w' } }), []);
});

test('a frame failure names the definition and the path, as the pytest runner does', () => {
  const documents = new Documents(SCHEMAS, {});
  assert.equal(
    documents.frameProblem({ type: 'done', id: 'r1', extra: 1 }),
    "Additional properties are not allowed ('extra' was unexpected) (at /, checked as frame.schema.json#/$defs/done)",
  );
  assert.match(
    documents.frameProblem({ type: 'error', id: 'r1', error: { code: 'Bad-Code', message: 'x' } }),
    /^'Bad-Code' (does not match|is not one of).* \(at \/error\/code, checked as /,
  );
  assert.equal(documents.frameReport(3, { type: 'done' }).split('\n')[0], "frame #3 does not match frame.schema.json: 'id' is a required property (at /, checked as frame.schema.json#/$defs/done)");
  assert.equal(documents.frameProblem({ type: 'done', id: 'r1' }), null);
});

test('the validator covers the listed keywords, refs across files and JSON pointers', () => {
  const r = new Registry();
  r.add('a.schema.json', { $id: 'a.schema.json', $defs: { n: { type: 'integer', minimum: 1, maximum: 3 }, 'x/y': { const: 'slash' } } });
  r.add('b.schema.json', {
    $id: 'b.schema.json',
    type: 'object',
    required: ['n'],
    additionalProperties: false,
    properties: {
      n: { $ref: 'a.schema.json#/$defs/n' },
      s: { $ref: 'a.schema.json#/$defs/x~1y' },
      t: { type: 'array', prefixItems: [{ type: 'string' }], items: { type: 'number' }, uniqueItems: true, minItems: 1, maxItems: 3 },
      u: { oneOf: [{ type: 'string', minLength: 2 }, { type: 'string', maxLength: 1 }] },
      v: { anyOf: [{ enum: [1, 2] }, { type: 'null' }] },
      w: { allOf: [{ type: 'number' }, { exclusiveMinimum: 0 }], not: { const: 5 } },
      x: { if: { const: 'a' }, then: { pattern: '^a$' }, else: { pattern: '^\\d+$' } },
      y: { type: 'object', patternProperties: { '^p_': { type: 'integer' } }, propertyNames: { pattern: '^[a-z_]+$' }, additionalProperties: false },
    },
  });
  const v = r.validator('b.schema.json');
  assert.deepEqual(v({ n: 2, s: 'slash', t: ['a', 1, 2], u: 'ab', v: null, w: 1, x: '12', y: { p_a: 1 } }), []);
  const bad = [
    [{}, "'n' is a required property"],
    [{ n: 4 }, 'greater than the maximum'],
    [{ n: 1.5 }, 'is not of type'],
    [{ n: 1, s: 'x' }, 'was expected'],
    [{ n: 1, t: ['a', 'b'] }, 'is not of type'],
    [{ n: 1, t: ['a', 1, 1] }, 'non-unique'],
    [{ n: 1, t: [] }, 'should be non-empty'],
    [{ n: 1, u: 3 }, 'is not of type'],
    [{ n: 1, v: 3 }, 'is not one of [1, 2]'],
    [{ n: 1, w: 5 }, 'should not be valid'],
    [{ n: 1, w: 0 }, 'less than or equal to the minimum'],
    [{ n: 1, x: 'b' }, 'does not match'],
    [{ n: 1, y: { p_a: 'x' } }, 'is not of type'],
    [{ n: 1, y: { Q: 1 } }, 'does not match'],
    [{ n: 1, z: 1 }, 'Additional properties'],
  ];
  for (const [value, message] of bad) {
    const error = bestError(v(value));
    assert.ok(error, JSON.stringify(value));
    assert.ok(error.message.includes(message), `${JSON.stringify(value)}: ${error.message}`);
  }
  assert.throws(() => new Registry().errors({ format: 'x', minContains: 1 }, 1, {}), /minContains/);
});

test('portable regexes: the subset compiles, the rest is refused, meanings are the subset\'s', () => {
  const yes = (p, text) => assert.ok(search(compilePortable(p), text), `${p} on ${JSON.stringify(text)}`);
  const no = (p, text) => assert.ok(!search(compilePortable(p), text), `${p} on ${JSON.stringify(text)}`);
  yes('^run_[0-9a-f]{4,}$', 'run_abcd');
  yes('a\\.b\\/\\{', 'a.b/{');
  yes('a\\sb', 'a\u00a0b'); // \s is ECMAScript white space
  yes('[\\s\\S]*x', 'a\nx');
  yes('(?:ab)+?c', 'ababc');
  no('x$', 'x\n'); // $ is the end of the text only
  no('a.b', 'a\nb'); // . stops at a line terminator
  no('\\d', '\u0663');
  for (const p of ['(?s)a.b', '(?i)x', '(?<=a)b', '(?=a)', '(?P<n>a)', '\\Aa', 'a\\Z', '\\p{L}', 'a*+', '(a)\\1', '\\x41', '[[:alpha:]]', 'a\\"', 'a{', 'x]', '[\\b]', '[^\\S]', '[]a]', '[\\d-z]']) {
    assert.throws(() => compilePortable(p), RegexError, p);
  }
  assert.ok(search(compilePortable('(?s)a.b$', { python: true }), 'a\nb\n'));
});

test('globs: ** spans directories, * and ? stay in a segment, dotfiles match', () => {
  assert.ok(globRegExp('.swamp/workflow-runs/**/*.json').test('.swamp/workflow-runs/w/r.json'));
  assert.ok(globRegExp('.swamp/workflow-runs/**/*.json').test('.swamp/workflow-runs/r.json'));
  assert.ok(!globRegExp('*.json').test('a/b.json'));
  assert.ok(globRegExp('*').test('.hidden'));
  assert.ok(globRegExp('f?.[!x]').test('f1.y'));
  assert.ok(!globRegExp('f?.[!x]').test('f1.x'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'glob-'));
  for (const f of ['b/x.json', 'a/y.json', 'a/.z.json']) {
    fs.mkdirSync(path.join(dir, path.dirname(f)), { recursive: true });
    fs.writeFileSync(path.join(dir, f), '{}');
  }
  fs.symlinkSync(path.join(dir, 'a'), path.join(dir, 'link'));
  assert.deepEqual(glob(dir, '**/*.json'), ['a/.z.json', 'a/y.json', 'b/x.json']);
  assert.deepEqual(glob(dir, '*'), ['a', 'b', 'link']);
  fs.rmSync(dir, { recursive: true });
});

test('shell words split and join like Python shlex', () => {
  assert.deepEqual(shlexSplit(`a 'b c' "d \\"e\\" \\x" f\\ g ''`), ['a', 'b c', 'd "e" \\x', 'f g', '']);
  assert.equal(shlexJoin(['a', 'b c', "it's", '']), `a 'b c' 'it'"'"'s' ''`);
  assert.throws(() => shlexSplit("'open"));
});

test('matching, captures and the frame order rules', () => {
  const captures = {};
  assert.deepEqual(match({ id: { $capture: 'x', $type: 'string' }, n: 1, gone: { $absent: true } }, { id: 'r', n: 1.0 }, captures), []);
  assert.equal(captures.x, 'r');
  assert.equal(match(true, 1, {}).length, 1);
  assert.deepEqual(substitute({ '${x}': ['${x}', 'a-${x}', '$${x}'], n: '${n}' }, { x: 'r', n: [1] }), { r: ['r', 'a-r', '${x}'], n: [1] });
  const frames = [{ id: 'a', n: 1 }, { id: 'b', n: 1 }, { id: 'a', n: 2 }];
  assert.deepEqual(assignFrames([{ id: 'a', n: 2 }, { id: 'a', n: 1 }], frames, {})[0].length, 1);
  assert.deepEqual(assignFrames([{ id: 'b' }, { id: 'a', n: 1 }, { id: 'a', n: 2 }], frames, {}, { only: true })[0], []);
});

test('snapshot and unchanged: bytes, inode, size and mtime must all stay', async () => {
  const { ScenarioRun } = await import('../execute.mjs');
  const { Step } = await import('../scenario.mjs');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snapshot-'));
  const documents = new Documents(SCHEMAS, {});
  const check = async (change) => {
    const work = fs.mkdtempSync(path.join(dir, 'w-'));
    const scenario = {
      id: 's', init: false, env: {}, files: { 'a.txt': 'same\n' },
      steps: [
        new Step(0, 'files', { files: [{ path: 'a.txt', snapshot: 'before' }] }),
        new Step(1, 'files', { files: [{ path: 'a.txt', unchanged: 'before' }] }),
      ],
    };
    const run = new ScenarioRun(scenario, ['true'], work, documents, 's.yaml');
    const original = run.step.bind(run);
    run.step = async (step) => {
      if (step.index === 1) change(path.join(work, 'repo', 'a.txt'));
      return original(step);
    };
    try {
      await run.run();
      return null;
    } catch (err) {
      return err.message.split('\n')[0];
    }
  };
  assert.equal(await check(() => {}), null);
  const later = new Date(Date.now() + 5000);
  assert.match(await check((f) => fs.utimesSync(f, later, later)), /changed since snapshot 'before': mtime_ns /);
  assert.match(await check((f) => fs.writeFileSync(f, 'diff\n')), /changed since snapshot 'before': bytes .*mtime_ns/);
  assert.match(await check((f) => {
    fs.writeFileSync(f + '.new', 'same\n');
    const st = fs.statSync(f);
    fs.utimesSync(f + '.new', st.atime, st.mtime);
    fs.renameSync(f + '.new', f);
  }), /changed since snapshot 'before': inode /);
  assert.match(await check((f) => fs.rmSync(f)), /path 'a.txt': expected it to exist/);
  fs.rmSync(dir, { recursive: true });
});

test('JSON values are read and written as the pytest runner does (json.dumps, ensure_ascii=False)', () => {
  const big = '1' + '0'.repeat(399);
  const text = `{"b": 1, "10": [${big}, 2.0, 1e16, -0.0, 0.1, -0, 1E400, 9007199254740993], "\\u00e9": "\\u2028\\u0001"}`;
  const value = parseJson(text);
  assert.equal(dumpJson(value), `{"b": 1, "10": [${big}, 2.0, 1e+16, -0.0, 0.1, 0, Infinity, 9007199254740993], "é": "\u2028\\u0001"}`);
  assert.equal(dumpJson(parseJson('{"a": [1.5, {}], "2": []}'), 2), '{\n  "a": [\n    1.5,\n    {}\n  ],\n  "2": []\n}');
  for (const [x, repr] of [[1e16, '1e+16'], [1e15, '1000000000000000.0'], [0.0001, '0.0001'], [0.00001, '1e-05'], [1.5e300, '1.5e+300'], [-2.5, '-2.5'], [5e-324, '5e-324']]) {
    assert.equal(floatRepr(x), repr);
  }
  // what the matchers see: numbers by value, big integers exactly
  assert.deepEqual(match({ n: 2, k: parseJson(big) }, parseJson(`{"n": 2.0, "k": ${big}}`), {}), []);
  assert.notDeepEqual(match(parseJson('9007199254740993'), parseJson('9007199254740992'), {}), []);
  assert.deepEqual(match({ $type: 'integer' }, parseJson(big), {}), []);
  // substitution keeps what was captured, key order included
  const captured = substitute({ x: '${v}', s: 'v=${v}' }, { v: parseJson('{"2": 2.0, "1": 1}') });
  assert.equal(dumpJson(captured), '{"x": {"2": 2.0, "1": 1}, "s": "v={\\"2\\": 2.0, \\"1\\": 1}"}');
});

test('the digest of what a step sent is the pytest runner\'s', () => {
  // conformance/tests/test_runner.py computes the same constant with execute.py sent_digest
  const record = ['run', ['debug', '/w/x/repo', 'é\u2028'], [['A', '1'], ['B', null]], null, 'in\n'];
  assert.equal(sentDigest(record, '/w/x'), 'a4d88cbf6e7935a16144121ab20722c263bdc809a8d59032c077081db21d678c');
});

test('$extract stores the first group of the first match, as the pytest runner', () => {
  const captures = {};
  const page = '<form><input type="hidden" name="_csrf" value="f0rm-t0ken"><input name="_csrf" value="x"></form>';
  assert.deepEqual(match({ $extract: { regex: 'name="_csrf" value="([^"]+)"', name: 'csrf' } }, page, captures), []);
  assert.equal(captures.csrf, 'f0rm-t0ken');
  assert.deepEqual(match({ $extract: { regex: 'run_[0-9]+', name: 'r' }, $regex: '^ok' }, 'ok run_12 done', captures), []);
  assert.equal(captures.r, 'run_12');
  assert.deepEqual(match({ $extract: { regex: 'a(b)?c', name: 'g' } }, 'ac', captures), []);
  assert.equal(captures.g, '');
  const kept = {};
  assert.equal(match({ $extract: { regex: 'z', name: 'n' }, $type: 'string' }, 'abc', kept).length, 1);
  assert.deepEqual(kept, {});
  for (const arg of [{ regex: 'a' }, { regex: 'a', name: '1x' }, { regex: '(?=a)', name: 'n' }, 'a', { regex: 1, name: 'n' }]) {
    assert.throws(() => match({ $extract: arg }, 'a', {}), /\$extract/);
  }
});
