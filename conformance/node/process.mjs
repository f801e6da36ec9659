// Starting processes of the implementation: a clean environment, a new process group (so a timeout
// kills the process and everything it started), stdin written then closed, output collected.

import { spawn } from 'node:child_process';
import os from 'node:os';
import { pyRepr, shlexJoin } from './text.mjs';

export const DEFAULT_USER = 'conformance';

/** The clean environment every invocation starts from: nothing inherited but PATH. */
export function baseEnv(home, user, actor = null) {
  const env = {
    PATH: process.env.PATH ?? '/bin:/usr/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    NO_COLOR: '1',
    TERM: 'dumb',
    USER: user,
    LOGNAME: user,
  };
  if (actor !== null && actor !== undefined) env.SWAMP_ACTOR = actor;
  return env;
}

/** The OS account of this process's real user ID (the ID itself when it has no name). */
export function osAccount() {
  try {
    const name = os.userInfo().username;
    if (name) return name;
  } catch {
    // no entry in the password database
  }
  return String(process.getuid());
}

/** The exit code as Python reports it: -N for a process ended by signal N. */
export function exitCode(code, signal) {
  if (code !== null && code !== undefined) return code;
  if (signal) return -(os.constants.signals[signal] ?? 0);
  return null;
}

export function killGroup(child, signal = 'SIGKILL') {
  if (!child || child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

export class StartError extends Error {}

/**
 * Spawn `argv` in its own process group; rejects with StartError when it cannot start. `umask`
 * (a number) is the child's: spawn has no option for it, so the runner's own is set around the
 * spawn, which forks at once (no other JavaScript runs in between).
 */
export function start(argv, cwd, env, umask = null) {
  return new Promise((resolve, reject) => {
    let child;
    const previous = umask === null ? null : process.umask(umask);
    try {
      child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    } catch (err) {
      reject(new StartError(startMessage(argv, err)));
      return;
    } finally {
      if (previous !== null) process.umask(previous);
    }
    child.once('error', (err) => reject(new StartError(startMessage(argv, err))));
    child.once('spawn', () => resolve(child));
  });
}

function startMessage(argv, err) {
  const why = err.code === 'ENOENT' ? `[Errno 2] No such file or directory: ${pyRepr(argv[0])}`
    : err.code === 'EACCES' ? `[Errno 13] Permission denied: ${pyRepr(argv[0])}` : err.message;
  return `could not start the implementation ${pyRepr(shlexJoin(argv))}: ${why}\npass the command to test with --impl "<command>"`;
}

/** Run to the end (or kill the group after `timeout` seconds); resolves to a Result. */
export async function runProcess(argv, cwd, env, stdin, timeout, umask = null) {
  const child = await start(argv, cwd, env, umask);
  const out = [];
  const err = [];
  child.stdout.on('data', (b) => out.push(b));
  child.stderr.on('data', (b) => err.push(b));
  child.stdin.on('error', () => {});
  child.stdin.end(Buffer.from(stdin, 'utf8'));
  let timedOut = false;
  let lost = false;
  const closed = new Promise((resolve) => child.once('close', (code, signal) => resolve(exitCode(code, signal))));
  let timer;
  const expired = new Promise((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeout * 1000);
  });
  let code = await Promise.race([closed, expired]);
  clearTimeout(timer);
  if (code === 'timeout') {
    timedOut = true;
    killGroup(child);
    let grace;
    const graceOver = new Promise((resolve) => {
      grace = setTimeout(() => resolve('lost'), 5000);
    });
    code = await Promise.race([closed, graceOver]);
    clearTimeout(grace);
    if (code === 'lost') {
      lost = true;
      child.stdout.destroy();
      child.stderr.destroy();
    }
  }
  child.unref();
  return {
    argv,
    env,
    stdin,
    returncode: timedOut ? null : code,
    stdout: lost ? '' : Buffer.concat(out).toString('utf8'),
    stderr: lost ? '(output lost: a child process kept the pipes open)' : Buffer.concat(err).toString('utf8'),
    timedOut,
    timeout,
  };
}
