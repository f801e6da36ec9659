// Running one scenario against an implementation command, step by step, as
// conformance/runner/execute.py does; a failure throws ScenarioFailure whose message is the report.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { EnvHookFailure, runEnvHook } from './envhook.mjs';
import { dumpJson, isJsonObject, parseJson } from './json.mjs';
import { glob, listing } from './glob.mjs';
import { buildRequest, DEFAULT_HTTP_TIMEOUT, headerMap, HttpError, httpProblems, httpReport, requestRecord, send } from './http.mjs';
import { match, matchFrames, ScenarioError, substitute } from './matching.mjs';
import { baseEnv, DEFAULT_USER, osAccount, runProcess, StartError } from './process.mjs';
import { copyInto, initKey, keep } from './reuse_init.mjs';
import { rawText, repoPath } from './scenario.mjs';
import { Session, SessionFailure } from './session.mjs';
import { g, pyDumps, pyRepr, shlexJoin, shlexQuote, short } from './text.mjs';

const DEFAULT_TIMEOUT = 60;
const OUTPUT_LIMIT = 8000;
// Exit codes whose --json document is a result unless it has `error` (CLI-012): a failed run or
// validate, a watch whose timeout passed (WATCH-004), and a run stopped by SIGINT or SIGTERM (RUN-027).
const RESULT_EXITS = [1, 4, 130, 143];

export class ScenarioFailure extends Error {}

export const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

const arg = (value) => (typeof value === 'string' ? value : pyDumps(value));

export const SCENARIO_DIR = '<scenario-dir>'; // stands for the scenario's own directory in a step's digest

/** Code point order (Python's), not UTF-16's. */
function byCodePoints(a, b) {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    if (x[i] !== y[i]) return x[i].codePointAt(0) - y[i].codePointAt(0);
  }
  return x.length - y.length;
}

/** What a `files:` or `write` entry writes: its text, or a JSON value with indent 2 and a newline. */
const fileText = (content) => (typeof content === 'string' ? content : dumpJson(content, 2) + '\n');

/**
 * SHA-256 of what a step sent (FORMAT.md §10): `record` as compact JSON, every occurrence of the
 * scenario's directory replaced by <scenario-dir> (conformance/runner/execute.py sent_digest).
 */
export function sentDigest(record, workdir) {
  const scrub = (v) => (typeof v === 'string' ? v.split(workdir).join(SCENARIO_DIR) : Array.isArray(v) ? v.map(scrub) : v);
  return crypto.createHash('sha256').update(Buffer.from(JSON.stringify(scrub(record)), 'utf8')).digest('hex');
}

export class ScenarioRun {
  constructor(scenario, impl, workdir, documents, displayPath, envHook = null, reuseInit = false) {
    this.reuseInit = reuseInit;
    this.scenario = scenario;
    this.envHook = envHook;
    this.hookEnv = {}; // what --env-hook printed for this scenario
    this.impl = impl;
    this.repo = path.join(workdir, 'repo');
    this.home = path.join(workdir, 'home');
    this.documents = documents;
    this.displayPath = displayPath;
    this.captures = { account: osAccount() };
    this.workdir = workdir;
    this.sent = []; // per step that sent something: {step: label, sha256: digest of what it sent}
    this.snapshots = new Map();
    this.written = new Map(); // what the scenario itself wrote, by relative path
  }

  async run() {
    fs.mkdirSync(this.repo, { recursive: true });
    fs.mkdirSync(this.home, { recursive: true });
    if (this.envHook) {
      try {
        this.hookEnv = await runEnvHook(this.envHook, this.scenario.id);
      } catch (err) {
        if (!(err instanceof EnvHookFailure)) throw err;
        throw new ScenarioFailure(`env hook: ${err.message}\n  scenario: ${this.scenario.id} (${this.displayPath})\nnothing of the scenario ran`);
      }
    }
    if (this.scenario.init) await this.initRepo();
    this.recordWrite('files', this.placeholderSub(this.scenario.files, 'files'));
    this.write(this.sub(this.scenario.files, 'files'), 'files');
    for (const step of this.scenario.steps) await this.step(step);
  }

  async initRepo() {
    const [argv, env] = this.command(['repo', 'init', '.'], {}, null);
    const key = initKey(argv, env, this.home);
    if (this.reuseInit && copyInto(key, this.repo)) return;
    const result = await this.invoke(['repo', 'init', '.'], {}, null, '', null);
    if (result.timedOut || result.returncode !== 0) this.fail('init (`repo init .`)', [exitProblem(result, 'exit code 0')], result);
    if (this.reuseInit) keep(key, this.repo);
  }

  step(step) {
    return this[`step_${step.kind}`](step);
  }

  sub(value, where) {
    return substitute(value, this.captures, where);
  }

  /** Substitution with every capture standing for itself (`${name}`), for a step's digest. */
  placeholderSub(value, where) {
    const names = Object.fromEntries(Object.keys(this.captures).map((n) => [n, '${' + n + '}']));
    return substitute(value, names, where);
  }

  recordSent(label, record) {
    this.sent.push({ step: label, sha256: sentDigest(record, this.workdir) });
  }

  /**
   * The digest of a process the step starts: its argv after the implementation's words, the
   * environment the scenario and the step set (a name without value: null), the step's user and
   * its stdin, every capture as `${name}`.
   */
  recordProcess(label, kind, args, env, user, stdin) {
    const merged = { ...this.placeholderSub(this.scenario.env, 'env'), ...env };
    const pairs = Object.keys(merged).sort(byCodePoints).map((k) => [k, merged[k] === null ? null : arg(merged[k])]);
    this.recordSent(label, [kind, args.map(arg), pairs, user, stdin]);
  }

  recordStep(step, args, stdin) {
    const env = this.placeholderSub(step.data.env ?? {}, `${step.where}.env`);
    const user = this.placeholderSub(step.data.user ?? null, `${step.where}.user`);
    this.recordProcess(step.label, step.kind, args, env, user, stdin);
  }

  recordWrite(label, files) {
    const entries = Object.keys(files).sort(byCodePoints).map((rel) => [rel, files[rel] === null ? null : fileText(files[rel])]);
    this.recordSent(label, ['write', entries]);
  }

  command(args, env, user) {
    const fullEnv = baseEnv(this.home, user || DEFAULT_USER, user);
    Object.assign(fullEnv, this.hookEnv); // the scenario's and the step's env still win over the hook's
    for (const [key, value] of Object.entries({ ...this.sub(this.scenario.env, 'env'), ...env })) {
      if (value === null) delete fullEnv[key];
      else fullEnv[key] = arg(value);
    }
    return [[...this.impl, ...args.map(arg)], fullEnv];
  }

  baseValue(key) {
    return baseEnv(this.home, DEFAULT_USER)[key];
  }

  async invoke(args, env, user, stdin, timeout) {
    const [argv, fullEnv] = this.command(args, env, user);
    try {
      return await runProcess(argv, this.repo, fullEnv, stdin, timeout || DEFAULT_TIMEOUT);
    } catch (err) {
      if (err instanceof StartError) throw new ScenarioFailure(err.message);
      throw err;
    }
  }

  async invokeStep(step, args, stdin) {
    const data = step.data;
    const env = this.sub(data.env ?? {}, `${step.where}.env`);
    const user = this.sub(data.user ?? null, `${step.where}.user`);
    const result = await this.invoke(args, env, user, stdin, data.timeout);
    if (result.timedOut) this.fail(step.label, [exitProblem(result, 'the process to finish')], result);
    return result;
  }

  // ------------------------------------------------------------------ steps

  async step_run(step) {
    const where = step.where;
    const args = this.sub(step.data.run, `${where}.run`);
    const stdin = this.sub(step.data.stdin ?? '', `${where}.stdin`);
    this.recordStep(step, this.placeholderSub(step.data.run, `${where}.run`), this.placeholderSub(step.data.stdin ?? '', `${where}.stdin`));
    const result = await this.invokeStep(step, args, stdin);
    const expect = this.sub(step.data.expect ?? {}, `${where}.expect`);
    const problems = this.checkExit(expect, result);
    if ('json' in expect) {
      let document;
      let ok = true;
      try {
        document = parseJson(result.stdout);
      } catch (err) {
        ok = false;
        problems.push(`json: stdout is not exactly one JSON document (${err.message})`);
      }
      if (ok) problems.push(...match(expect.json, document, this.captures).map((m) => `json ${m}`));
    }
    for (const stream of ['stdout', 'stderr']) {
      if (stream in expect) problems.push(...textProblems(stream, expect[stream], result[stream], this.captures));
    }
    if (step.data.expect && 'frames' in step.data.expect) { // a command's own --jsonl mode: stdout is frames
      const [frames, frameProblems] = this.parseFrames(result.stdout);
      problems.push(...frameProblems);
      problems.push(...matchFrames(expect.frames, frames, this.captures, expect.only ?? false));
    } else {
      problems.push(...this.outputProblems(args.map(arg), result, 'json' in expect));
    }
    for (const stream of ['stdout', 'stderr']) {
      if (stream in expect) problems.push(...textProblems(stream, expect[stream], result[stream], this.captures));
    }
    if (problems.length) this.fail(step.label, problems, result, { frames: 'frames' in expect });
  }

  /** A --json command's document against its schema: the error document when it refused (any exit
   * code but 0, and 1 only with an `error`), else its command's entry of the index; a command with
   * --jsonl writes frames. */
  outputProblems(args, result, reported) {
    if (!result.stdout.trim() || result.returncode === null) return [];
    if (args.includes('--jsonl')) return result.returncode === 0 ? this.parseFrames(result.stdout)[1] : [];
    const docs = this.documents;
    if (!args.includes('--json') || docs.errorDocument === null) return [];
    let document;
    try {
      document = parseJson(result.stdout);
    } catch (err) {
      return reported ? [] : [`stdout of a --json command is not one JSON document (${err.message})`];
    }
    const isObj = isJsonObject(document);
    const refused = result.returncode !== 0 && (!RESULT_EXITS.includes(result.returncode) || (isObj && 'error' in document));
    let ref;
    let what;
    if (refused) {
      ref = docs.errorDocument;
      what = 'the error document';
    } else {
      const key = docs.commandKey(args);
      if (key === null) {
        const words = args.filter((a) => !a.startsWith('-')).join(' ');
        return [`no schema for the output of \`${words}\`: index.json has no \`commands\` entry for it`];
      }
      ref = docs.commands[key];
      what = `the --json document of \`${key}\``;
    }
    const problem = docs.problem(document, ref);
    return problem === null ? [] : [`${what} does not match ${ref}: ${problem}${this.cited()}`];
  }

  async step_jsonl(step) {
    const where = step.where;
    const build = (sub) => {
      const requests = sub(step.data.jsonl ?? [], `${where}.jsonl`);
      const raw = rawText(sub(step.data.raw ?? '', `${where}.raw`));
      return requests.map((r) => pyDumps(r) + '\n').join('') + raw;
    };
    const stdin = build((v, w) => this.sub(v, w));
    this.recordStep(step, ['--jsonl'], build((v, w) => this.placeholderSub(v, w)));
    const result = await this.invokeStep(step, ['--jsonl'], stdin);
    const expect = this.sub(step.data.expect ?? {}, `${where}.expect`);
    const problems = this.checkExit(expect, result);
    const [frames, frameProblems] = this.parseFrames(result.stdout);
    problems.push(...frameProblems);
    if ('frames' in expect) problems.push(...matchFrames(expect.frames, frames, this.captures, expect.only ?? false));
    if ('stderr' in expect) problems.push(...textProblems('stderr', expect.stderr, result.stderr, this.captures));
    if (problems.length) this.fail(step.label, problems, result, { frames: true });
  }

  async step_files(step) {
    const checks = this.sub(step.data.files, `${step.where}.files`);
    const timeout = step.data.timeout;
    const deadline = Date.now() + (timeout ?? 0) * 1000;
    const saved = this.captures;
    let problems;
    for (;;) {
      this.captures = { ...saved };
      const snapshots = new Map(this.snapshots);
      problems = [];
      let trial;
      try {
        checks.forEach((check, i) => problems.push(...this.checkFiles(`files[${i}]`, check, snapshots)));
      } finally {
        trial = this.captures;
        this.captures = saved;
      }
      if (!problems.length) {
        Object.assign(this.captures, trial);
        this.snapshots = snapshots;
        return;
      }
      if (Date.now() >= deadline) break;
      await sleep(0.1);
    }
    if (timeout) problems.push(`still so after ${g(timeout)} s of checking again`);
    this.fail(step.label, problems, null, { listing: true });
  }

  step_write(step) {
    this.recordWrite(step.label, this.placeholderSub(step.data.write, `${step.where}.write`));
    this.write(this.sub(step.data.write, `${step.where}.write`), `${step.where}.write`);
  }

  /** One HTTP request; the response's status, headers and body matched (FORMAT.md §11). */
  async step_http(step) {
    const where = `${step.where}.http`;
    const request = buildRequest(this.sub(step.data.http, where), rawText);
    this.recordSent(step.label, requestRecord(buildRequest(this.placeholderSub(step.data.http, where), rawText)));
    const timeout = Number(step.data.timeout ?? DEFAULT_HTTP_TIMEOUT);
    let response;
    try {
      response = await send(request, timeout);
    } catch (err) {
      if (err instanceof HttpError) this.fail(step.label, [err.message], null, { details: httpReport(request, null) });
      throw err;
    }
    const expect = this.sub(step.data.expect ?? {}, `${step.where}.expect`);
    const trial = { ...this.captures };
    const problems = [...httpProblems(expect, response, trial), ...this.httpErrorProblems(response)];
    if (problems.length) this.fail(step.label, problems, null, { details: httpReport(request, response) });
    Object.assign(this.captures, trial);
  }

  /** A JSON answer with a 4xx or 5xx status is the error document (FORMAT.md §9, §11). */
  httpErrorProblems(response) {
    const kind = (headerMap(response)['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    const ref = this.documents.errorDocument;
    if (response.status < 400 || kind !== 'application/json' || ref === null) return [];
    let document;
    try {
      document = parseJson(response.body);
    } catch (err) {
      return [`the body of a ${response.status} answer says application/json but is not JSON (${err.message})`];
    }
    const problem = this.documents.problem(document, ref);
    return problem === null ? [] : [`the body of a ${response.status} answer does not match ${ref}: ${problem}${this.cited()}`];
  }

  async step_session(step) {
    const session = new Session(this, step);
    let failed = true;
    try {
      try {
        await session.start();
      } catch (err) {
        if (err instanceof SessionFailure) this.fail(`${step.label} (starting the process)`, err.problems, null, { session });
        throw err;
      }
      for (const sub of step.substeps) {
        try {
          if (['run', 'jsonl', 'files', 'write', 'http'].includes(sub.kind)) await this.step(sub);
          else await session.do(sub);
        } catch (err) {
          if (err instanceof SessionFailure) this.fail(sub.label, err.problems, null, { session });
          if (err instanceof ScenarioFailure && !(err.fromSession)) {
            const extra = [`while the session of ${step.label} was open:`, ...session.header(), ...session.body()].join('\n');
            const wrapped = new ScenarioFailure(`${err.message}\n${extra}`);
            wrapped.fromSession = true;
            throw wrapped;
          }
          throw err;
        }
      }
      failed = false;
    } finally {
      await session.finish(failed);
    }
  }

  // ------------------------------------------------------------------ helpers

  checkExit(expect, result) {
    const wanted = 'exit' in expect ? expect.exit : 0;
    return match(wanted, result.returncode, this.captures).map((m) => `exit code: ${m.message}`);
  }

  parseFrames(stdout) {
    const lines = stdout.split('\n');
    if (lines.length && lines[lines.length - 1] === '') lines.pop();
    const frames = [];
    const problems = [];
    lines.forEach((line, n) => {
      let frame;
      try {
        frame = parseJson(line);
      } catch (err) {
        problems.push(`stdout line ${n + 1} is not a JSON frame (${err.message}): ${short(line)}`);
        return;
      }
      const problem = this.frameReport(frames.length, frame);
      if (problem) problems.push(problem);
      frames.push(frame);
    });
    return [frames, problems];
  }

  /** The report of a frame the frame schema refuses (null when it passes). */
  frameReport(number, frame) {
    const problem = this.documents.frameReport(number, frame);
    return problem ? problem + this.cited() : null;
  }

  /** The line a schema failure ends with: what the scenario says it proves. */
  cited() {
    return `\n    requirements the scenario cites: ${this.scenario.requirements.join(', ')}`;
  }

  checkFiles(where, check, snapshots) {
    const problems = [];
    let found;
    if ('glob' in check) {
      const pattern = check.glob;
      repoPath(this.repo, pattern, where);
      found = glob(this.repo, pattern);
      const label = `${where} glob ${pyRepr(pattern)}`;
      const names = '[' + found.map(pyRepr).join(', ') + ']';
      if ('count' in check) {
        if (match(check.count, found.length, { ...this.captures }).length) {
          problems.push(`${label}: expected count ${short(check.count)}, got ${found.length}: ${names}`);
        }
      } else if (!found.length) {
        problems.push(`${label}: expected at least one match, got none`);
      }
    } else {
      const full = repoPath(this.repo, check.path, where);
      const label = `${where} path ${pyRepr(check.path)}`;
      const wanted = check.exists ?? true;
      const exists = fs.existsSync(full);
      if (exists !== wanted) problems.push(`${label}: expected it ${wanted ? 'to exist' : 'not to exist'}`);
      found = exists && wanted ? [path.relative(this.repo, full).split(path.sep).join('/')] : [];
      if ('snapshot' in check && exists) snapshots.set(check.snapshot, fingerprint(full));
      if ('unchanged' in check && exists) {
        const before = snapshots.get(check.unchanged);
        const now = fingerprint(full);
        const differ = ['bytes', 'inode', 'size', 'mtime_ns'].filter((k) => before[k] !== now[k]);
        if (differ.length) {
          problems.push(`${label}: changed since snapshot ${pyRepr(check.unchanged)}: ${differ.map((k) => `${k} ${before[k]} -> ${now[k]}`).join(', ')}`);
        }
      }
    }
    for (const rel of found) {
      problems.push(...this.checkContent(`${where} ${rel}`, rel, check));
      problems.push(...this.fileSchemaProblems(`${where} ${rel}`, rel));
    }
    return problems;
  }

  /** A file the implementation wrote, against the schema the index gives its path (a file still
   * holding exactly what the scenario wrote there is the scenario's, not checked). */
  fileSchemaProblems(label, rel) {
    const ref = this.documents.fileSchema(rel);
    const full = path.join(this.repo, rel);
    let data;
    try {
      if (ref === null || !fs.statSync(full).isFile()) return [];
      data = fs.readFileSync(full);
    } catch (err) {
      return ref === null ? [] : [`${label}: cannot read it (${err.message})`];
    }
    if (this.written.has(rel) && this.written.get(rel).equals(data)) return [];
    let document;
    try {
      document = parseJson(new TextDecoder('utf-8', { fatal: true }).decode(data));
    } catch (err) {
      return [`${label}: not a JSON document (${err.message}), and ${ref} applies to it`];
    }
    const problem = this.documents.problem(document, ref);
    return problem === null ? [] : [`${label}: does not match ${ref}: ${problem}${this.cited()}`];
  }

  checkContent(label, rel, check) {
    const problems = [];
    const full = path.join(this.repo, rel);
    if ('mode' in check) {
      const mode = fs.lstatSync(full).mode & 0o7777;
      const wanted = parseInt(check.mode, 8);
      if (mode !== wanted) problems.push(`${label}: expected mode ${oct(wanted)}, got ${oct(mode)}`);
    }
    if (!('json' in check) && !('text' in check)) return problems;
    let text;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(fs.readFileSync(full)).replace(/\r\n?/g, '\n');
    } catch (err) {
      return [...problems, `${label}: cannot read it as UTF-8 text (${err.message})`];
    }
    if ('text' in check) problems.push(...textProblems(`${label} text`, check.text, text, this.captures));
    if ('json' in check) {
      let document;
      try {
        document = parseJson(text);
      } catch (err) {
        return [...problems, `${label}: not a JSON document (${err.message})`];
      }
      problems.push(...match(check.json, document, this.captures).map((m) => `${label} json ${m}`));
    }
    return problems;
  }

  write(files, where) {
    for (const [rel, content] of Object.entries(files)) {
      const full = repoPath(this.repo, rel, where);
      const name = path.relative(this.repo, full).split(path.sep).join('/');
      this.written.delete(name);
      if (content === null) {
        fs.rmSync(full, { recursive: true, force: true });
        continue;
      }
      const text = fileText(content);
      fs.mkdirSync(path.dirname(full), { recursive: true });
      fs.writeFileSync(full, Buffer.from(text, 'utf8'));
      this.written.set(name, Buffer.from(text, 'utf8'));
    }
  }

  // ------------------------------------------------------------------ reporting

  fail(what, problems, result, { frames = false, listing: list = false, session = null, details = [] } = {}) {
    const more = problems.length > 1 ? ` (+${problems.length - 1} more)` : '';
    const out = [`${what}: ${problems[0].split('\n')[0]}${more}`, `  scenario: ${this.scenario.id} (${this.displayPath})`];
    if (result) {
      const base = baseEnv(this.home, DEFAULT_USER);
      const extra = Object.entries(result.env).filter(([k, v]) => base[k] !== v).sort(([a], [b]) => (a < b ? -1 : 1));
      out.push(
        `  command: ${shlexJoin(result.argv)}`,
        `  cwd: ${this.repo}`,
        '  env (besides the clean base env): ' + (extra.map(([k, v]) => `${k}=${shlexQuote(v)}`).join(' ') || '(none)'),
        `  exit code: ${result.timedOut ? '(timed out)' : result.returncode}`,
      );
    }
    if (session) out.push(...session.header());
    out.push('problems:', ...problems.map((p) => indent(p, '  - ', '    ')));
    out.push(...details);
    if (session) out.push(...session.body());
    if (result) {
      if (result.stdin) out.push('stdin:', block(result.stdin));
      if (frames) out.push('stdout (frames numbered #0...):', framesBlock(result.stdout));
      else out.push('stdout:', block(result.stdout));
      out.push('stderr:', block(result.stderr));
    }
    if (list) out.push('files in the repo dir:', block(listing(this.repo)));
    if (Object.keys(this.captures).length) out.push('captures: ' + short(this.captures, 1000));
    out.push(`repo dir (kept): ${this.repo}`);
    throw new ScenarioFailure(out.join('\n'));
  }
}

function fingerprint(full) {
  const st = fs.statSync(full, { bigint: true });
  const bytes = crypto.createHash('sha256').update(fs.readFileSync(full)).digest('hex').slice(0, 16);
  return { bytes, inode: String(st.ino), size: String(st.size), mtime_ns: String(st.mtimeNs) };
}

const oct = (n) => n.toString(8).padStart(4, '0');

export function exitProblem(result, wanted) {
  if (result.timedOut) {
    return `timed out after ${g(result.timeout)} s waiting for ${wanted} (the process was killed); a step may set \`timeout:\` to allow longer`;
  }
  return `exit code: expected 0, got ${result.returncode}`;
}

function textProblems(label, expected, text, captures) {
  return match(expected, text, captures).map((m) => `${label}: ${m.message}`);
}

function indent(text, first, rest) {
  const lines = text.split('\n');
  return [first + lines[0], ...lines.slice(1).map((l) => rest + l)].join('\n');
}

function truncate(text) {
  if (text.length <= OUTPUT_LIMIT) return text;
  return text.slice(0, OUTPUT_LIMIT) + `\n... (${text.length - OUTPUT_LIMIT} more characters)`;
}

export function block(text) {
  if (!text) return '  | (empty)';
  return truncate(text).replace(/\n+$/, '').split('\n').map((l) => '  | ' + l).join('\n');
}

function framesBlock(stdout) {
  if (!stdout) return '  | (empty)';
  const out = [];
  let number = 0;
  for (const line of truncate(stdout).replace(/\n+$/, '').split('\n')) {
    try {
      parseJson(line);
      out.push(`  #${number} ${line}`);
      number += 1;
    } catch {
      out.push('  !! ' + line);
    }
  }
  return out.join('\n');
}

export { ScenarioError };
