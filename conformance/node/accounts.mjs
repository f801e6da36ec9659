// The feature `os-accounts`, as conformance/runner/accounts.py has it: each account role of a
// scenario is the OS account `swpr-<role>` (its primary group of the same name), each group role
// the OS group `swprg-<name>` whose members are exactly the accounts listed. They are made once per
// runner process with useradd/groupadd/gpasswd (what exists already is left as it is, a group's
// members are set only when they differ), and a step says `as: ROLE` to run its process through
// `setpriv --reuid --regid --init-groups` (Node's own uid/gid spawn options drop the supplementary
// groups). README.md "Several OS accounts" is the contract.

import { execFile } from 'node:child_process';

export const ACCOUNT_PREFIX = 'swpr-';
export const GROUP_PREFIX = 'swprg-';
const LOCK_WAIT = 10; // seconds to retry a tool that found /etc/passwd or /etc/group locked

export const ROOT_ONLY = 'needs root: the runner makes the OS accounts and groups of os-accounts scenarios with useradd '
  + 'and groupadd (run the runner as root, or leave os-accounts out of --features)';

export const UNREACHABLE = "if it is the scenario's account that may not run the implementation (Permission denied), put "
  + 'the implementation and its interpreter where other accounts may run them, with no folder only its owner may enter '
  + 'on the way (README.md, "Several OS accounts")';

export class AccountSetupFailure extends Error {}

export const accountName = (role) => ACCOUNT_PREFIX + role;
export const groupName = (role) => GROUP_PREFIX + role;
export const canMakeAccounts = () => typeof process.geteuid === 'function' && process.geteuid() === 0;

/** `argv` run as the account of `role`, with its primary and supplementary groups. */
export function wrap(role, argv) {
  const name = accountName(role);
  return ['setpriv', `--reuid=${name}`, `--regid=${name}`, '--init-groups', '--', ...argv];
}

function run(argv) {
  return new Promise((resolve) => {
    execFile(argv[0], argv.slice(1), { timeout: 60000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ code, stdout, stderr, error });
    });
  });
}

const pause = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

/** Run a shadow tool; `exists` is its exit code for "already there" (another runner was first). */
async function tool(argv, exists = null) {
  const deadline = Date.now() + LOCK_WAIT * 1000;
  for (;;) {
    const done = await run(argv);
    if (done.code === null) {
      throw new AccountSetupFailure(`\`${argv.join(' ')}\` could not run (${done.error.message}); os-accounts needs useradd, groupadd and gpasswd (shadow utilities)`);
    }
    if (done.code === 0 || done.code === exists) return;
    if (done.stderr.toLowerCase().includes('lock') && Date.now() < deadline) {
      await pause(0.1);
      continue;
    }
    throw new AccountSetupFailure(`\`${argv.join(' ')}\` failed (exit ${done.code}): ${done.stderr.trim()}`);
  }
}

/** Makes the account unless it exists; returns its user ID. */
async function ensureAccount(name) {
  let found = await run(['getent', 'passwd', name]);
  if (found.code !== 0) {
    await tool(['groupadd', name], 9);
    await tool(['useradd', '--no-create-home', '--no-user-group', '--gid', name, '--shell', '/usr/sbin/nologin', name], 9);
    found = await run(['getent', 'passwd', name]);
  }
  return Number(found.stdout.split(':')[2]);
}

async function ensureGroup(name, members) {
  const found = await run(['getent', 'group', name]);
  let current = [];
  if (found.code === 0) {
    const list = found.stdout.trim().split(':')[3] ?? '';
    current = list.split(',').filter(Boolean).sort();
  } else {
    await tool(['groupadd', name], 9);
  }
  if (current.join(',') !== members.join(',')) await tool(['gpasswd', '--members', members.join(','), name]);
}

/** What this runner process has made already: each account and group is checked once. */
class Accounts {
  constructor() {
    this.done = new Set();
    this.uids = new Map(); // account name -> user ID
    this.queue = Promise.resolve(); // one setup at a time (scenarios run concurrently)
  }

  ensure(accounts, groups) {
    const next = this.queue.then(async () => {
      for (const role of accounts) {
        if (this.done.has(`a:${role}`)) continue;
        this.uids.set(accountName(role), await ensureAccount(accountName(role)));
        this.done.add(`a:${role}`);
      }
      for (const [role, members] of Object.entries(groups)) {
        const key = `g:${role}:${[...members].sort().join(',')}`;
        if (this.done.has(key)) continue;
        await ensureGroup(groupName(role), members.map(accountName).sort());
        this.done.add(key);
      }
    });
    this.queue = next.catch(() => {});
    return next;
  }
}

export const ACCOUNTS = new Accounts(); // one per runner process
