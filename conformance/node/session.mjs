// A `session` step: one process of the implementation kept running across several exchanges, as
// conformance/runner/session.py. The process's stdin/stdout is the channel `stdio`; `connect` opens
// more (Unix socket connections). Frames read on every channel are kept in order; an `expect` takes
// the frames it matches and later `expect`s see only the frames not taken yet.

import fs from 'node:fs';
import net from 'node:net';

import path from 'node:path';
import { parseJson } from './json.mjs';
import { assignFrames, match, ScenarioError } from './matching.mjs';
import { killGroup, exitCode, start, StartError } from './process.mjs';
import { rawText, repoPath, STDIO } from './scenario.mjs';
import { g, pyDumps, shlexJoin, shlexQuote, short } from './text.mjs';

const DEFAULT_EXPECT_TIMEOUT = 10;
const DEFAULT_CONNECT_TIMEOUT = 10;
const STOP_TIMEOUT = 10;
const POLL = 0.02;

const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

export class SessionFailure extends Error {
  constructor(problems) {
    super(problems[0]);
    this.problems = problems;
  }
}

/** One stream of frames: the process's stdout (`stdio`) or a socket connection. */
class Channel {
  constructor(name, run) {
    this.name = name;
    this.run = run; // the ScenarioRun: its frameReport validates each frame
    this.frames = [];
    this.problems = [];
    this.lines = [];
    this.sent = [];
    this.taken = new Set();
    this.reported = 0;
    this.eof = false;
    this.checkFrames = true; // false: JSON lines that are not protocol frames (a session with `stdout: json`)
    this.pending = Buffer.alloc(0);
  }

  readFrom(stream) {
    stream.on('data', (chunk) => {
      let data = Buffer.concat([this.pending, chunk]);
      let nl;
      while ((nl = data.indexOf(10)) >= 0) {
        this.add(data.subarray(0, nl).toString('utf8'));
        data = data.subarray(nl + 1);
      }
      this.pending = data;
    });
    const end = () => {
      if (this.eof) return;
      if (this.pending.length) this.add(this.pending.toString('utf8'));
      this.pending = Buffer.alloc(0);
      this.eof = true;
    };
    stream.on('end', end);
    stream.on('close', end);
    stream.on('error', end);
  }

  add(line) {
    this.lines.push(line);
    let frame;
    try {
      frame = parseJson(line);
    } catch (err) {
      this.problems.push(`${this.name}: line ${this.lines.length} is not a JSON frame (${err.message}): ${short(line)}`);
      return;
    }
    const problem = !this.checkFrames ? null : this.run.frameReport(this.frames.length, frame);
    if (problem) this.problems.push(`${this.name}: ${problem}`);
    this.frames.push(frame);
  }

  snapshot() {
    const numbers = [...this.frames.keys()].filter((i) => !this.taken.has(i));
    return [numbers, numbers.map((i) => this.frames[i]), this.problems.slice(this.reported), this.eof];
  }

  render(keep = 200) {
    if (!this.lines.length) return '  | (nothing yet)';
    let out = [];
    let number = 0;
    for (const line of this.lines) {
      try {
        parseJson(line);
      } catch {
        out.push('  !! ' + cut(line));
        continue;
      }
      out.push(`  #${number}${this.taken.has(number) ? '*' : ' '} ${cut(line)}`);
      number += 1;
    }
    if (out.length > keep) out = [`  ... (${out.length - keep} earlier lines)`, ...out.slice(-keep)];
    return out.join('\n');
  }
}

export class Session {
  constructor(run, step) {
    this.run = run;
    this.step = step;
    this.channels = new Map();
    this.sockets = new Map();
    this.stderr = [];
    this.stderrEnded = false;
    this.proc = null;
    this.code = null;
    this.exited = false;
    this.argv = [];
    this.env = {};
  }

  // ------------------------------------------------------------------ lifecycle

  async start() {
    const spec = this.run.sub(this.step.data.session, `${this.step.where}.session`);
    [this.argv, this.env] = this.run.command(spec.args, spec.env ?? {}, spec.user ?? null);
    const shown = this.run.placeholderSub(this.step.data.session, `${this.step.where}.session`);
    this.run.recordProcess(this.step.label, 'session', shown.args, shown.env ?? {}, shown.user ?? null, '');
    try {
      this.proc = await start(this.argv, this.run.repo, this.env);
    } catch (err) {
      if (err instanceof StartError) throw new SessionFailure([err.message.split('\n')[0]]);
      throw err;
    }
    this.exitPromise = new Promise((resolve) => {
      this.proc.once('exit', (code, signal) => {
        this.code = exitCode(code, signal);
        this.exited = true;
        resolve();
      });
    });
    this.proc.stdin.on('error', () => {});
    const stdio = this.channel(STDIO);
    if (this.step.data.session.stdout === 'json') stdio.checkFrames = false; // JSON lines, not frames (FORMAT.md §11)
    stdio.readFrom(this.proc.stdout);
    this.proc.stderr.on('data', (b) => this.stderr.push(b));
    const ended = () => {
      this.stderrEnded = true;
    };
    this.proc.stderr.on('end', ended);
    this.proc.stderr.on('close', ended);
  }

  channel(name) {
    const channel = new Channel(name, this.run);
    this.channels.set(name, channel);
    return channel;
  }

  stderrText() {
    return Buffer.concat(this.stderr).toString('utf8');
  }

  returncode() {
    return this.exited ? this.code : null;
  }

  async waitExit(seconds) {
    if (this.exited) return true;
    let timer;
    const over = new Promise((resolve) => {
      timer = setTimeout(() => resolve(false), seconds * 1000);
    });
    const result = await Promise.race([this.exitPromise.then(() => true), over]);
    clearTimeout(timer);
    return result;
  }

  /** End whatever is still open: on failure at once, otherwise EOF, then SIGTERM, then SIGKILL. */
  async finish(failed) {
    for (const sock of this.sockets.values()) sock.destroy();
    if (this.proc && !this.exited) {
      if (failed) {
        killGroup(this.proc);
      } else {
        this.closeStdin();
        try {
          this.proc.kill('SIGTERM');
        } catch {
          // gone
        }
        await this.waitExit(STOP_TIMEOUT);
      }
    }
    killGroup(this.proc);
    if (this.proc) {
      await this.waitExit(5);
      this.proc.stdout.destroy();
      this.proc.stderr.destroy();
      this.proc.unref();
    }
  }

  closeStdin() {
    if (this.proc) {
      try {
        this.proc.stdin.end();
      } catch {
        // already closed
      }
    }
  }

  // ------------------------------------------------------------------ sub-steps

  do(sub) {
    return this[`do_${sub.kind}`](sub);
  }

  async do_send(sub) {
    const build = (substitute) => {
      const frames = substitute(sub.data.send, `${sub.where}.send`);
      const raw = rawText(substitute(sub.data.raw ?? '', `${sub.where}.raw`));
      return frames.map((f) => pyDumps(f) + '\n').join('') + raw;
    };
    const text = build((v, w) => this.run.sub(v, w));
    const name = sub.data.to ?? STDIO;
    this.run.recordSent(sub.label, ['send', name, build((v, w) => this.run.placeholderSub(v, w))]);
    this.channels.get(name).sent.push(text);
    const target = name === STDIO ? this.proc.stdin : this.sockets.get(name);
    const problem = await new Promise((resolve) => {
      if (target.destroyed || target.writableEnded) {
        resolve('the stream is closed');
        return;
      }
      target.write(Buffer.from(text, 'utf8'), (err) => resolve(err ? err.message : null));
    });
    if (problem) throw new SessionFailure([`send to ${name}: could not write (${problem}); ${this.state()}`]);
  }

  async do_expect(sub) {
    const expect = this.run.sub(sub.data.expect, `${sub.where}.expect`);
    const name = sub.data.from ?? STDIO;
    const channel = this.channels.get(name);
    const timeout = Number(sub.data.timeout ?? DEFAULT_EXPECT_TIMEOUT);
    const deadline = Date.now() + timeout * 1000;
    for (;;) {
      const broken = channel.snapshot()[2];
      if (broken.length) {
        channel.reported = channel.problems.length;
        throw new SessionFailure(broken);
      }
      const settled = this.settled(channel);
      const [problems, commit] = await this.evaluate(expect, channel);
      if (!problems.length) {
        commit();
        return;
      }
      if (settled || Date.now() >= deadline) {
        const why = settled
          ? 'nothing more can arrive (the process has ended and the channel is closed)'
          : `still not so after ${g(timeout)} s (a sub-step may set \`timeout:\`)`;
        throw new SessionFailure([...problems, `waited on ${name}: ${why}`]);
      }
      await sleep(POLL);
    }
  }

  settled(channel) {
    return this.returncode() !== null && channel.eof && this.stderrEnded;
  }

  async evaluate(expect, channel) {
    const trial = { ...this.run.captures };
    const problems = [];
    if ('exit' in expect) {
      const code = this.returncode();
      if (code === null) problems.push('exit code: the process is still running');
      else {
        await this.drain(channel);
        problems.push(...match(expect.exit, code, trial).map((m) => `exit code: ${m.message}`));
      }
    }
    const [numbers, frames] = channel.snapshot();
    let used = new Map();
    if ('frames' in expect) {
      const [found, assigned] = assignFrames(expect.frames, frames, trial, { only: expect.only ?? false, numbers });
      problems.push(...found);
      used = assigned;
    }
    if ('stderr' in expect) problems.push(...match(expect.stderr, this.stderrText(), trial).map((m) => `stderr: ${m.message}`));
    const commit = () => {
      Object.assign(this.run.captures, trial);
      for (const j of used.keys()) channel.taken.add(numbers[j]);
    };
    return [problems, commit];
  }

  async drain(channel) {
    const deadline = Date.now() + 2000;
    while (!channel.eof && Date.now() < deadline) await sleep(POLL);
  }

  do_close(sub) {
    const name = sub.data.close;
    if (name === STDIO) {
      this.closeStdin();
      return;
    }
    const sock = this.sockets.get(name);
    if (sock.destroyed) throw new SessionFailure([`close ${name}: the connection is closed`]);
    sock.end();
  }

  do_drop(sub) {
    const name = sub.data.drop;
    const sock = this.sockets.get(name);
    this.sockets.delete(name);
    sock.destroy();
  }

  do_signal(sub) {
    const name = sub.data.signal;
    const code = this.returncode();
    if (code !== null) throw new SessionFailure([`signal ${name}: the process has already exited (exit code ${code})`]);
    this.proc.kill(`SIG${name}`);
  }

  do_sleep(sub) {
    return sleep(Number(sub.data.sleep));
  }

  async do_connect(sub) {
    const rel = this.run.sub(sub.data.connect, `${sub.where}.connect`);
    const full = repoPath(this.run.repo, rel, sub.where);
    const name = sub.data.as;
    const timeout = Number(sub.data.timeout ?? DEFAULT_CONNECT_TIMEOUT);
    const deadline = Date.now() + timeout * 1000;
    let address = full;
    if (Buffer.byteLength(address) > 100) {
      address = path.relative(process.cwd(), full);
      if (Buffer.byteLength(address) > 100) throw new ScenarioError(`${sub.where}: the socket path ${full} is too long for a Unix socket`);
    }
    let last = null;
    let sock;
    for (;;) {
      try {
        sock = await connect(address);
        break;
      } catch (err) {
        last = err;
      }
      if (this.returncode() !== null || Date.now() >= deadline) {
        throw new SessionFailure([`connect ${rel}: no connection within ${g(timeout)} s (${describeError(last)}); ${this.state()}`]);
      }
      await sleep(0.05);
    }
    const owner = fs.statSync(address).uid;
    if (owner !== process.getuid() && owner !== 0) {
      sock.destroy();
      throw new SessionFailure([`connect ${rel}: the socket belongs to uid ${owner}, not to this user`]);
    }
    sock.on('error', () => {});
    this.sockets.set(name, sock);
    this.channel(name).readFrom(sock);
  }

  state() {
    const code = this.returncode();
    return code === null ? 'the process is still running' : `the process exited with code ${code}`;
  }

  // ------------------------------------------------------------------ reporting

  header() {
    const extra = Object.entries(this.env).filter(([k, v]) => this.run.baseValue(k) !== v).sort(([a], [b]) => (a < b ? -1 : 1));
    const code = this.returncode();
    return [
      `  session: ${shlexJoin(this.argv)}`,
      '  session env (besides the clean base env): ' + (extra.map(([k, v]) => `${k}=${shlexQuote(v)}`).join(' ') || '(none)'),
      `  session process: ${code === null ? 'still running' : `exited with code ${code}`}`,
    ];
  }

  body() {
    const out = [];
    for (const [name, channel] of this.channels) {
      const sent = channel.sent.join('');
      if (sent) out.push(`sent on ${name}:`, tailBlock(sent));
      out.push(`frames on ${name} (numbered #0...; * = taken by an earlier expect):`, channel.render());
    }
    out.push('session stderr:', tailBlock(this.stderrText()));
    return out;
  }
}

function connect(address) {
  return new Promise((resolve, reject) => {
    const sock = net.createConnection({ path: address, allowHalfOpen: true });
    sock.once('connect', () => {
      sock.removeAllListeners('error');
      resolve(sock);
    });
    sock.once('error', (err) => {
      sock.destroy();
      reject(err);
    });
  });
}

function describeError(err) {
  if (!err) return 'no attempt';
  const names = { ENOENT: '[Errno 2] No such file or directory', ECONNREFUSED: '[Errno 111] Connection refused' };
  return names[err.code] ?? err.message;
}

function cut(line, limit = 600) {
  return line.length <= limit ? line : line.slice(0, limit - 3) + '...';
}

function tailBlock(text, limit = 8000) {
  if (!text) return '  | (empty)';
  if (text.length > limit) {
    return '  | ...\n' + text.slice(-limit).replace(/\n+$/, '').split('\n').map((l) => '  | ' + l).join('\n');
  }
  return text.replace(/\n+$/, '').split('\n').map((l) => '  | ' + l).join('\n');
}


