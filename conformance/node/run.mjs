#!/usr/bin/env node
// The second conformance runner (Node.js, standard library only): runs the scenarios of the
// portable export conformance/scenarios.json against an implementation command, as the pytest
// plugin (conformance/conftest.py) does, scenario by scenario. See conformance/node/README.md.
//
//   node conformance/node/run.mjs --impl "<command>" [--features core,serve] [--jobs N]
//        [--results-json PATH] [--id ID] [--folder DIR] [--exclude ID-OR-DIR] [--filter TEXT]
//        [--include-selftest] [--scenarios PATH] [--env-hook CMD] [--reuse-init]
//
// --reuse-init: `repo init .` once per distinct environment, its tree copied to the later scenarios
// (FORMAT.md §4; only for an implementation whose repo init makes the same tree wherever it runs).
//
// Exit status: 0 every scenario run passed, 1 some failed, 2 a broken scenario or a usage error.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Documents, SchemaError } from './documents.mjs';
import { canMakeAccounts, ROOT_ONLY } from './accounts.mjs';
import { ScenarioFailure, ScenarioRun } from './execute.mjs';
import { regexOptions, ScenarioError } from './matching.mjs';
import { loadExport, loadScenario, ScenarioSchema } from './scenario.mjs';
import { shlexJoin, shlexSplit } from './text.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CONFORMANCE = path.dirname(HERE);
const ROOT = path.dirname(CONFORMANCE);
const SELFTEST_DIR = '_selftest';

const USAGE = `usage: node conformance/node/run.mjs --impl "<command>" [--features core,serve] [--jobs N]
       [--results-json PATH] [--id ID] [--folder DIR] [--exclude ID-OR-DIR] [--filter TEXT]
       [--include-selftest] [--scenarios PATH]
       [--schemas DIR] [--frame-schema PATH] [--keep] [--python-regex] [--env-hook CMD] [--reuse-init]`;
// Features selected only when --features names them: the run store being PostgreSQL is a property of
// how the implementation is set up for the run (--env-hook), not of the implementation; other OS
// accounts need a runner running as root to create them.
export const OPT_IN_FEATURES = ['postgresql-store', 'os-accounts'];

class UsageError extends Error {}

/** Repeated options and comma lists, flattened; empty items dropped. */
function splitValues(value) {
  return value.split(',').map((v) => v.trim()).filter(Boolean);
}

function under(file, folder) {
  const dir = folder.replace(/^\/+|\/+$/g, '');
  return dir !== '' && file.startsWith(dir + '/');
}

/**
 * --id, --folder, --exclude (conformance/runner/selection.py has the same rules): with --id or
 * --folder only the scenarios with one of those exact ids or under one of those folders; then
 * --exclude leaves out a scenario by exact id or every scenario under a folder. A name matching no
 * scenario is a usage error. Returns the chosen scenarios.
 */
export function selectScenarios(scenarios, { ids = [], folders = [], excludes = [] } = {}) {
  const known = new Set(scenarios.map((s) => s.id));
  const problems = [
    ...ids.filter((i) => !known.has(i)).map((i) => `--id ${i}: no scenario has this id`),
    ...folders.filter((f) => !scenarios.some((s) => under(s.file, f))).map((f) => `--folder ${f}: no scenario is under this folder`),
    ...excludes.filter((x) => !known.has(x) && !scenarios.some((s) => under(s.file, x)))
      .map((x) => `--exclude ${x}: no scenario has this id or is under this folder`),
  ];
  if (problems.length) throw new UsageError(problems.join('; '));
  return scenarios.filter((s) => {
    const named = ids.includes(s.id) || folders.some((f) => under(s.file, f));
    if ((ids.length || folders.length) && !named) return false;
    return !excludes.some((x) => x === s.id || under(s.file, x));
  });
}

export function parseArgs(argv) {
  const options = {
    impl: null, features: null, jobs: 2, resultsJson: null, filter: [], ids: [], folders: [], excludes: [], includeSelftest: false,
    scenarios: path.join(CONFORMANCE, 'scenarios.json'), schemas: path.join(ROOT, 'spec', 'schemas'),
    frameSchema: null, keep: false, pythonRegex: false, envHook: null, reuseInit: false,
  };
  const valued = { '--impl': 'impl', '--features': 'features', '--jobs': 'jobs', '--results-json': 'resultsJson', '--filter': 'filter', '--id': 'ids', '--folder': 'folders', '--exclude': 'excludes', '--scenarios': 'scenarios', '--schemas': 'schemas', '--frame-schema': 'frameSchema', '--env-hook': 'envHook' };
  for (let i = 0; i < argv.length; i += 1) {
    let word = argv[i];
    let value;
    const eq = word.indexOf('=');
    if (word.startsWith('--') && eq > 0) {
      value = word.slice(eq + 1);
      word = word.slice(0, eq);
    }
    if (word === '-h' || word === '--help') {
      process.stdout.write(USAGE + '\n');
      process.exit(0);
    } else if (word === '--include-selftest') options.includeSelftest = true;
    else if (word === '--keep') options.keep = true;
    else if (word === '--reuse-init') options.reuseInit = true;
    else if (word === '--python-regex') options.pythonRegex = true;
    else if (word in valued) {
      if (value === undefined) {
        i += 1;
        if (i >= argv.length) throw new UsageError(`${word} needs a value`);
        value = argv[i];
      }
      const key = valued[word];
      if (key === 'filter') options.filter.push(value);
      else if (['ids', 'folders', 'excludes'].includes(key)) options[key].push(...splitValues(value));
      else options[key] = value;
    } else throw new UsageError(`unknown argument ${word}`);
  }
  const jobs = Number(options.jobs);
  if (!Number.isInteger(jobs) || jobs < 1) throw new UsageError('--jobs takes a positive integer');
  options.jobs = jobs;
  return options;
}

/** The --env-hook command split like a shell; relative paths taken as for --impl. */
export function resolveHook(value, start = process.cwd()) {
  if (!value) return null;
  let argv;
  try {
    argv = shlexSplit(value);
  } catch (err) {
    throw new UsageError(`--env-hook: ${err.message}`);
  }
  if (!argv.length) throw new UsageError('--env-hook: empty command');
  return argv.map((word, i) => (word.includes('/') && !path.isAbsolute(word) && (i === 0 || fs.existsSync(path.join(start, word)))
    ? path.join(start, word) : word));
}

/** The --impl command split like a shell; relative paths taken from where the runner started. */
export function resolveImpl(value, start = process.cwd()) {
  if (!value) {
    for (const dir of (process.env.PATH ?? '').split(':')) {
      const candidate = path.join(dir || '.', 'swamp');
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        if (fs.statSync(candidate).isFile()) return [candidate];
      } catch {
        // not here
      }
    }
    return null;
  }
  let argv;
  try {
    argv = shlexSplit(value);
  } catch (err) {
    throw new UsageError(`--impl: ${err.message}`);
  }
  return argv.map((word, i) => {
    if (word.includes('/') && !path.isAbsolute(word) && (i === 0 || fs.existsSync(path.join(start, word)))) {
      return path.join(start, word);
    }
    return word;
  });
}

function selectedFeatures(value, known) {
  if (!value) return known.filter((n) => !OPT_IN_FEATURES.includes(n));
  const names = new Set(value.split(',').map((n) => n.trim()).filter(Boolean));
  if (names.has('all')) { // every feature selected by default, e.g. `all,postgresql-store`
    names.delete('all');
    for (const n of known) if (!OPT_IN_FEATURES.includes(n)) names.add(n);
  }
  const unknown = [...names].filter((n) => !known.includes(n)).sort();
  if (unknown.length) throw new UsageError(`--features: unknown feature(s) ${unknown.join(', ')}; known: ${known.join(', ')}`);
  names.add('core');
  return [...names];
}

/**
 * A group role is one OS group for the whole run: its members must be the same in every scenario
 * that names it (FORMAT.md §2, os-accounts). Returns a broken-scenario report per conflict.
 */
export function groupConflicts(scenarios) {
  const seen = new Map();
  const out = [];
  for (const scenario of scenarios) {
    for (const [name, members] of Object.entries(scenario.groups)) {
      const wanted = [...members].sort();
      if (!seen.has(name)) seen.set(name, [wanted, scenario.id]);
      const [first, firstId] = seen.get(name);
      if (first.join(',') !== wanted.join(',')) {
        out.push(`broken scenario conformance/scenarios/${scenario.file}:\n  groups.${name}: members [${wanted.join(', ')}], but scenario ${firstId} gives the group [${first.join(', ')}]; a group's members are the same in every scenario (name another group)`);
      }
    }
  }
  return out;
}

export function featureTable(outcomes, features) {
  const table = {};
  for (const name of features) {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const result of Object.values(outcomes)) if (result.features.includes(name)) counts[result.outcome] += 1;
    const ran = counts.passed + counts.failed;
    table[name] = { ...counts, verdict: !ran ? 'not run' : counts.failed ? 'failed' : 'passed' };
  }
  return table;
}

function isSelftest(file) {
  return file.split('/').slice(0, -1).includes(SELFTEST_DIR);
}

async function pool(items, jobs, work) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next];
      next += 1;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, items.length) }, worker));
}

export async function main(argv) {
  const write = (text) => process.stdout.write(text + '\n');
  let options;
  try {
    options = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${USAGE}\nrun.mjs: error: ${err.message}\n`);
    return 2;
  }
  regexOptions.python = options.pythonRegex;
  let schema;
  let exported;
  let documents;
  let features;
  let impl;
  let envHook;
  try {
    schema = new ScenarioSchema(path.join(CONFORMANCE, 'scenario.schema.json'));
    features = selectedFeatures(options.features, schema.features);
    impl = resolveImpl(options.impl);
    envHook = resolveHook(options.envHook);
    exported = loadExport(options.scenarios);
    documents = new Documents(options.schemas, regexOptions, options.frameSchema);
  } catch (err) {
    if (err instanceof UsageError || err instanceof ScenarioError || err instanceof SchemaError) {
      process.stderr.write(`run.mjs: error: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  if (!impl) {
    process.stderr.write('run.mjs: error: no implementation to test: no swamp on PATH; pass --impl "<command>"\n');
    return 2;
  }
  // load and check every scenario first: a broken one stops the run before anything runs
  const scenarios = [];
  const broken = [];
  for (const entry of exported.scenarios) {
    if (isSelftest(entry.file ?? '') && !options.includeSelftest) continue;
    try {
      scenarios.push(loadScenario(entry, schema));
    } catch (err) {
      if (!(err instanceof ScenarioError || err instanceof SchemaError)) throw err;
      broken.push(`broken scenario conformance/scenarios/${entry.file}:\n  ${err.message}`);
    }
  }
  broken.push(...groupConflicts(scenarios));
  if (broken.length) {
    write(broken.join('\n\n'));
    write(`${broken.length} broken scenario(s); nothing was run`);
    return 2;
  }
  let selected;
  try {
    selected = selectScenarios(scenarios, options);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`run.mjs: error: ${err.message}\n`);
    return 2;
  }
  // --filter TEXT: a substring of the id or of a cited requirement, or a feature's exact name
  const chosen = selected.filter((s) => !options.filter.length || options.filter.some(
    (f) => s.id.includes(f) || s.requirements.some((r) => r.includes(f)) || s.features.includes(f)));
  if (!chosen.length) {
    write('no scenarios selected');
    return 2;
  }
  write(`conformance impl: ${shlexJoin(impl)} (${chosen.length} scenarios, ${options.jobs} at a time)`);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'swamp-node-'));
  // os-accounts: the scenarios' other accounts must reach their folders (mkdtemp makes it 0700)
  if (chosen.some((s) => s.accounts.length)) fs.chmodSync(root, 0o755);
  const outcomes = {};
  const failures = [];
  let counter = 0;
  const started = Date.now();
  await pool(chosen, options.jobs, async (scenario) => {
    const missing = scenario.features.filter((f) => !features.includes(f)).sort();
    if (missing.length) {
      outcomes[scenario.id] = { outcome: 'skipped', features: [...scenario.features].sort(), sent: [] };
      write(`skip ${scenario.id} (needs feature(s) not selected: ${missing.join(', ')})`);
      return;
    }
    if (scenario.features.includes('os-accounts') && !canMakeAccounts()) {
      outcomes[scenario.id] = { outcome: 'skipped', features: [...scenario.features].sort(), sent: [] };
      write(`skip ${scenario.id} (os-accounts ${ROOT_ONLY})`);
      return;
    }
    counter += 1;
    const workdir = path.join(root, `${scenario.id.slice(0, 40)}-${counter}`);
    const display = `conformance/scenarios/${scenario.file}`;
    let outcome = 'passed';
    const execution = new ScenarioRun(scenario, impl, workdir, documents, display, envHook, options.reuseInit);
    try {
      await execution.run();
    } catch (err) {
      outcome = 'failed';
      if (err instanceof ScenarioFailure) failures.push([scenario.id, err.message]);
      else if (err instanceof ScenarioError || err instanceof SchemaError) failures.push([scenario.id, `broken scenario ${display}: ${err.message}`]);
      else failures.push([scenario.id, `internal error of the runner: ${err.stack}`]);
    }
    // sent: per step that sent something, the digest of what it sent (compare-runners compares them)
    outcomes[scenario.id] = { outcome, features: [...scenario.features].sort(), sent: execution.sent };
    write(`${outcome === 'passed' ? 'ok  ' : 'FAIL'} ${scenario.id}`);
    // Best effort: a process the implementation detached (a hook, HOOK-009) may still be writing
    // its last file there (ENOTEMPTY while the tree is removed). A folder left behind in the
    // runner's temporary directory is harmless; a runner that crashed on it would lose every result.
    if (outcome === 'passed' && !options.keep) {
      try {
        fs.rmSync(workdir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
      } catch (error) {
        write(`note: could not remove ${workdir} (${error.code || error.message}); left in place`);
      }
    }
  });
  for (const [id, report] of failures.sort(([a], [b]) => (a < b ? -1 : 1))) {
    write(`\n${'_'.repeat(20)} ${id} ${'_'.repeat(20)}\n${report}`);
  }
  const table = featureTable(outcomes, schema.features);
  write('\n==== conformance features ====');
  write(`${'feature'.padEnd(18)} ${'passed'.padStart(6)} ${'failed'.padStart(6)} ${'skipped'.padStart(7)}  verdict`);
  for (const [name, row] of Object.entries(table)) {
    write(`${name.padEnd(18)} ${String(row.passed).padStart(6)} ${String(row.failed).padStart(6)} ${String(row.skipped).padStart(7)}  ${row.verdict}`);
  }
  const counts = { passed: 0, failed: 0, skipped: 0 };
  for (const r of Object.values(outcomes)) counts[r.outcome] += 1;
  write(`${counts.failed} failed, ${counts.passed} passed, ${counts.skipped} skipped in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  if (options.resultsJson) {
    const sorted = Object.fromEntries(Object.entries(outcomes).sort(([a], [b]) => (a < b ? -1 : 1)));
    const document = { impl: shlexJoin(impl), features: [...features].sort(), scenarios: sorted, featureTable: table };
    fs.writeFileSync(options.resultsJson, JSON.stringify(document, null, 2) + '\n');
  }
  if (!fs.readdirSync(root).length) fs.rmSync(root, { recursive: true, force: true });
  return counts.failed ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
