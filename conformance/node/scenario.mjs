// Loading the portable export (conformance/scenarios.json) and checking each scenario statically,
// before anything runs, as conformance/runner/scenario.py does for the YAML: the scenario schema
// per step kind, one kind per step, session channels, paths that stay in the repo dir, matchers
// and regexes, and captures used only after a step defines them.

import fs from 'node:fs';
import path from 'node:path';
import { isJsonObject, parseJson } from './json.mjs';
import { capturedNames, checkExpected, isMatcher, references, ScenarioError } from './matching.mjs';
import { bestError, Registry } from './schema.mjs';

export const STDIO = 'stdio';
const STEP_KEYS = { run: 'run', jsonl: 'jsonl', raw: 'jsonl', files: 'files', write: 'write', session: 'session', http: 'http' };
// the keys of an `expect` whose matchers may capture
const CAPTURING_KEYS = ['json', 'stdout', 'stderr', 'exit', 'frames', 'status', 'headers', 'body'];
const SESSION_KEYS = { send: 'send', close: 'close', drop: 'drop', signal: 'signal', sleep: 'sleep', connect: 'connect' };
export const PREDEFINED = new Set(['account']);

export class Step {
  constructor(index, kind, data, parent = null, substeps = []) {
    Object.assign(this, { index, kind, data, parent, substeps });
  }

  get where() {
    return this.parent === null ? `steps[${this.index}]` : `steps[${this.parent}].steps[${this.index}]`;
  }

  get label() {
    const name = this.data.name;
    return `${this.where} (${this.kind}${name ? ': ' + name : ''})`;
  }
}

/** The scenario schema (conformance/scenario.schema.json), its validator and the known features. */
export class ScenarioSchema {
  constructor(file) {
    this.schema = JSON.parse(fs.readFileSync(file, 'utf8'));
    this.registry = new Registry();
    this.registry.add('scenario.schema.json', this.schema);
    this.features = this.schema.properties.features.items.enum;
  }

  check(data, kind, where) {
    const target = kind === null ? this.schema : this.schema.$defs[`${kind}Step`];
    const error = bestError(this.registry.errors(target, data, this.schema));
    if (error) {
      const at = error.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('');
      throw new ScenarioError(`${where}${at}: ${error.message}`);
    }
  }
}

/** `rel` (a relative POSIX path or glob) inside `repo`; refuses escapes. */
export function repoPath(repo, rel, where) {
  const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
  if (!rel.trim() || rel.startsWith('/') || parts.includes('..') || rel.includes('\\')) {
    throw new ScenarioError(`${where}: ${JSON.stringify(rel)} must be a relative path that stays inside the repo dir`);
  }
  return path.join(repo, ...parts);
}

export function loadExport(file) {
  let doc;
  try {
    doc = parseJson(fs.readFileSync(file, 'utf8')); // lossless: every value reaches the implementation as written
  } catch (err) {
    throw new ScenarioError(`cannot read the scenarios export ${file}: ${err.message}`);
  }
  if (!doc || !Array.isArray(doc.scenarios)) throw new ScenarioError(`${file} has no "scenarios" list`);
  return doc;
}

/** A checked scenario from one entry of the export; throws ScenarioError naming the problem. */
export function loadScenario(entry, schema) {
  const { file, ...data } = entry;
  schema.check(data, null, 'scenario');
  const steps = data.steps.map((raw, i) => loadStep(i, raw, null, schema));
  const scenario = {
    file,
    id: data.id,
    title: data.title,
    requirements: data.requirements,
    features: data.features,
    init: data.init ?? true,
    env: data.env ?? {},
    files: data.files ?? {},
    steps,
  };
  checkPaths(scenario);
  checkCaptures(scenario);
  checkSnapshots(scenario);
  return scenario;
}

function loadStep(index, raw, parent, schema) {
  const where = parent === null ? `steps[${index}]` : `steps[${parent}].steps[${index}]`;
  let kinds;
  if (parent === null) {
    kinds = new Set(Object.keys(raw).filter((k) => k in STEP_KEYS).map((k) => STEP_KEYS[k]));
    if (kinds.size !== 1) {
      throw new ScenarioError(`${where}: a step needs exactly one of \`run\`, \`jsonl\` (and/or \`raw\`), \`files\`, \`write\`, \`http\`, \`session\`; got keys ${pyKeys(raw)}`);
    }
  } else {
    kinds = subKinds(raw, where);
  }
  const kind = [...kinds][0];
  schema.check(raw, kind, where);
  if (kind === 'session') {
    const subs = raw.steps.map((sub, i) => loadStep(i, sub, index, schema));
    checkChannels(subs);
    return new Step(index, kind, raw, parent, subs);
  }
  const step = new Step(index, kind, raw, parent);
  if (kind === 'connect' && references(raw.connect).size === 0) repoPath('/repo', raw.connect, where);
  for (const [key, value] of Object.entries(raw.expect ?? {})) {
    if (key === 'only') continue;
    if (key === 'frames') value.forEach((frame, i) => checkExpected(frame, `${where}.expect.frames[${i}]`));
    else if (key === 'headers') checkHeaders(value, `${where}.expect.headers`);
    else checkValue(value, `${where}.expect.${key}`, key === 'json');
  }
  if (kind === 'files') {
    raw.files.forEach((check, i) => {
      for (const key of ['count', 'json', 'text']) {
        if (key in check) checkValue(check[key], `${where}.files[${i}].${key}`, key === 'json');
      }
      if (check.glob !== undefined && (check.snapshot !== undefined || check.unchanged !== undefined)) {
        throw new ScenarioError(`${where}.files[${i}]: snapshot and unchanged take a path, not a glob`);
      }
    });
  }
  return step;
}

function pyKeys(obj) {
  return '[' + Object.keys(obj).sort().map((k) => `'${k}'`).join(', ') + ']';
}

function subKinds(raw, where) {
  if ('session' in raw) throw new ScenarioError(`${where}: sessions cannot be nested; end this one first`);
  const keys = Object.keys(raw).filter((k) => !(k === 'raw' && 'send' in raw));
  const kinds = new Set();
  for (const k of keys) {
    if (k in STEP_KEYS) kinds.add(STEP_KEYS[k]);
    if (k in SESSION_KEYS) kinds.add(SESSION_KEYS[k]);
  }
  if (!kinds.size && 'expect' in raw) kinds.add('expect');
  if (kinds.size !== 1) {
    throw new ScenarioError(`${where}: a session's step needs exactly one of \`send\`, \`expect\`, \`close\`, \`drop\`, \`signal\`, \`sleep\`, \`connect\`, or an ordinary step (\`run\`, \`jsonl\`, \`files\`, \`write\`, \`http\`); got keys ${pyKeys(raw)}`);
  }
  return kinds;
}

function checkChannels(subs) {
  const open = new Set([STDIO]);
  for (const sub of subs) {
    if (sub.kind === 'connect') {
      const name = sub.data.as;
      if (open.has(name)) throw new ScenarioError(`${sub.where}: a channel named '${name}' is already open in this session`);
      open.add(name);
      continue;
    }
    const key = { send: 'to', expect: 'from', close: 'close', drop: 'drop' }[sub.kind];
    const name = key ? (sub.data[key] ?? STDIO) : null;
    if (name !== null && !open.has(name)) {
      const known = [...open].sort().join(', ');
      throw new ScenarioError(`${sub.where}: ${key}: '${name}' is not an open channel of this session (open: ${known}); open a socket connection first with \`connect: PATH\` and \`as: NAME\``);
    }
    if (sub.kind === 'drop') {
      if (name === STDIO) throw new ScenarioError(`${sub.where}: drop takes a connection; end the process with \`signal\``);
      open.delete(name);
    }
  }
}

/** An `http` step's expected headers: names case-insensitive, each value a value or a matcher. */
function checkHeaders(expected, where) {
  const seen = new Map();
  for (const name of Object.keys(expected)) {
    const low = name.toLowerCase();
    if (seen.has(low)) throw new ScenarioError(`${where}: '${seen.get(low)}' and '${name}' name the same header`);
    seen.set(low, name);
    if (isJsonObject(expected[name]) && !isMatcher(expected[name])) {
      throw new ScenarioError(`${where}.${name}: expected a value or a matcher such as {$regex: ...}`);
    }
  }
  checkExpected(expected, where);
}

function checkValue(value, where, scalarDictOk) {
  if (isJsonObject(value) && !scalarDictOk && !isMatcher(value)) {
    throw new ScenarioError(`${where}: expected a value or a matcher such as {$regex: ...}, got an object`);
  }
  checkExpected(value, where);
}

function checkPaths(scenario) {
  for (const rel of Object.keys(scenario.files)) repoPath('/repo', rel, 'files');
  for (const step of flatSteps(scenario.steps)) {
    let names;
    if (step.kind === 'write') names = Object.keys(step.data.write);
    else if (step.kind === 'files') names = step.data.files.map((c) => c.glob || c.path);
    else continue;
    for (const rel of names) if (references(rel).size === 0) repoPath('/repo', rel, step.where);
  }
}

export function flatSteps(steps) {
  const out = [];
  for (const step of steps) out.push(step, ...step.substeps);
  return out;
}

function checkCaptures(scenario) {
  const defined = new Set(PREDEFINED);
  const early = [...references({ env: scenario.env, files: scenario.files })].filter((n) => !defined.has(n)).sort();
  if (early.length) {
    throw new ScenarioError(`the scenario's env/files refer to \${${early[0]}}, but nothing is captured before the steps; write $\${name} for a literal \${name}`);
  }
  for (const step of flatSteps(scenario.steps)) {
    const own = step.kind === 'session' ? { session: step.data.session } : step.data;
    const missing = [...references(own)].filter((n) => !defined.has(n)).sort();
    if (missing.length) {
      const known = [...defined].sort().join(', ') || 'none';
      throw new ScenarioError(`${step.label} refers to unknown capture(s) ${missing.map((n) => '${' + n + '}').join(', ')} (captured by earlier steps: ${known}); write $\${name} for a literal \${name}`);
    }
    const expect = step.data.expect ?? {};
    for (const n of capturedNames(CAPTURING_KEYS.map((k) => expect[k]))) defined.add(n);
    if (step.kind === 'files') {
      for (const check of step.data.files) {
        for (const n of capturedNames(['count', 'json', 'text'].map((k) => check[k]))) defined.add(n);
      }
    }
  }
}

/** `unchanged: NAME` needs a `snapshot: NAME` in an earlier step. */
function checkSnapshots(scenario) {
  const taken = new Set();
  for (const step of flatSteps(scenario.steps)) {
    if (step.kind !== 'files') continue;
    const here = [];
    step.data.files.forEach((check, i) => {
      if (check.unchanged !== undefined && !taken.has(check.unchanged)) {
        throw new ScenarioError(`${step.where}.files[${i}]: unchanged: ${JSON.stringify(check.unchanged)} names no snapshot taken by an earlier step`);
      }
      if (check.snapshot !== undefined) here.push(check.snapshot);
    });
    here.forEach((n) => taken.add(n));
  }
}

/** A step's `raw`: a string, or pieces, each a string or {repeat: S, times: N}. */
export function rawText(value) {
  if (typeof value === 'string') return value;
  return value.map((p) => (typeof p === 'string' ? p : p.repeat.repeat(p.times))).join('');
}
