// The per-scenario environment hook (`--env-hook CMD`, FORMAT.md §4), as
// conformance/runner/envhook.py does it: before a scenario the runner runs `CMD <scenario-id>`
// (argv, no shell) with the runner's own environment; each line `NAME=VALUE` it prints goes into
// the environment of every process of that scenario. A hook that fails fails the scenario, with its
// stderr, before anything of the scenario runs.

import { spawn } from 'node:child_process';
import { exitCode, killGroup } from './process.mjs';
import { g, pyRepr, shlexJoin } from './text.mjs';

export const HOOK_TIMEOUT = 120;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export class EnvHookFailure extends Error {}

/** Each non-empty line is NAME=VALUE (VALUE may hold `=`); anything else is refused. */
export function parseHookOutput(stdout) {
  const env = {};
  const lines = stdout.split(/\r\n|\r|\n/);
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    const eq = line.indexOf('=');
    const name = eq < 0 ? '' : line.slice(0, eq);
    if (eq < 0 || !NAME.test(name)) throw new EnvHookFailure(`line ${i + 1} of its stdout is not NAME=VALUE: ${pyRepr(line)}`);
    env[name] = line.slice(eq + 1);
  });
  return env;
}

/** Run the hook for one scenario; resolves to its variables, or rejects with EnvHookFailure. */
export function runEnvHook(argv, scenarioId, timeout = HOOK_TIMEOUT) {
  const command = [...argv, scenarioId];
  const shown = shlexJoin(command);
  return new Promise((resolve, reject) => {
    let child;
    try {
      child = spawn(command[0], command.slice(1), { env: process.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    } catch (err) {
      reject(new EnvHookFailure(`the environment hook \`${shown}\` could not start: ${err.message}`));
      return;
    }
    const out = [];
    const err = [];
    let timedOut = false;
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => err.push(b));
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, timeout * 1000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new EnvHookFailure(`the environment hook \`${shown}\` could not start: ${error.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) {
        reject(new EnvHookFailure(`the environment hook \`${shown}\` did not finish in ${g(timeout)} s`));
        return;
      }
      const status = exitCode(code, signal);
      if (status !== 0) {
        const stderr = Buffer.concat(err).toString('utf8').trimEnd();
        const block = stderr ? stderr.split(/\r\n|\r|\n/).map((l) => `  | ${l}`).join('\n') : '  (empty)';
        reject(new EnvHookFailure(`the environment hook \`${shown}\` exited ${status}; its stderr:\n${block}`));
        return;
      }
      try {
        resolve(parseHookOutput(Buffer.concat(out).toString('utf8')));
      } catch (error) {
        reject(new EnvHookFailure(`the environment hook \`${shown}\`: ${error.message}`));
      }
    });
  });
}
