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

What the saving process pays for a hook, measured on a loaded 2-core machine (20 launches of one
job: writing the job file, taking a slot lock, fork and exec of the supervisor, whose Python then
starts in its own time): 2.4 ms median, 12 ms at worst. A repository without hooks pays nothing
here. Modules: `launch` (the saving side), `supervisor` (the detached side).
"""

from __future__ import annotations

MAX_RUNNING = 4  # supervisors (so hook commands) at once in one repository, whatever process started them
