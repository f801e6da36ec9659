"""Running the repository's hooks, detached from the process whose save started them.

Why a spool and supervisors: a hook must never fail, delay or hold the run or the signal whose
save opened or settled a wait (HOOK-009), and a run that opens a thousand waits must not start a
thousand processes at once (HOOK-012). So the saving process only writes each hook's job (its
command, timeout, stdin document and the run's audit trail) as a file in `.swamp/hooks/queue/`
and, when one of the repository's MAX_RUNNING supervisor slots is free (a `flock` on
`.swamp/hooks/slot-<k>.lock`, held by a live supervisor), starts a supervisor in a session of its
own, handing it the locked slot. A supervisor (`python -m swamp.hooks`) takes jobs from the queue
oldest first until it is empty, running each `sh -c COMMAND` in the repository root with the
document on stdin, killing its process group past the timeout, and appending the outcome to the
run's audit trail (HOOK-010, HOOK-011). A job written while every slot is busy is taken by a
supervisor that is running: each one looks at the queue again after giving up its slot.

The costs the saving process pays, measured on the 2-core CI machine: writing the job file
(~0.1 ms), trying the slot locks (~0.05 ms) and starting the supervisor (~2 ms of fork and exec;
its Python starts in its own time). Modules: `launch` (the saving side), `supervisor` (the
detached side).
"""

from __future__ import annotations

MAX_RUNNING = 4  # supervisors (so hook commands) at once in one repository, whatever process started them
