// `--reuse-init` (FORMAT.md §4): `repo init .` runs once per distinct environment and every later
// scenario with that environment gets a copy of the tree it made (conformance/runner/reuse_init.py
// does the same for the pytest runner). Only for an implementation whose `repo init` makes the same
// tree wherever it runs. The key is the argv and the environment, the scenario's home standing for
// any home, so a scenario with another `env` or env hook output runs its own `repo init`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

let root = null;
const made = new Map();

export function initKey(argv, env, home) {
  const entries = Object.entries(env).map(([k, v]) => [k, String(v).split(home).join('<home>')]);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([argv, entries]);
}

const COPY = { recursive: true, verbatimSymlinks: true, preserveTimestamps: true };

/** Copies the tree kept for `key` into `repo`; false when there is none yet. */
export function copyInto(key, repo) {
  const template = made.get(key);
  if (template === undefined) return false;
  fs.cpSync(template, repo, COPY);
  return true;
}

/** Keeps a copy of `repo` as `repo init` just made it, for the next scenario with `key`. */
export function keep(key, repo) {
  if (made.has(key)) return;
  if (root === null) {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'swamp-init-templates-'));
    process.on('exit', () => fs.rmSync(root, { recursive: true, force: true }));
  }
  const template = path.join(root, String(made.size));
  fs.cpSync(repo, template, COPY);
  made.set(key, template);
}
