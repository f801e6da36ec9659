"""Keeping a hook's processes together, so that every one of them ends with the hook.

Why: a hook's shell may start processes in the background (`sleep 300 &`, a daemon, `setsid`),
and a notification must not leave them running once its outcome is audited (HOOK-014). Every
hook runs in a process group of its own, and the whole group is killed when its shell exits or
past its timeout. A process can leave its process group (`setsid`, `setpgid`, a shell's job
control), so where the machine offers it each hook also runs in a cgroup of its own (cgroup v2:
a child of the supervisor's cgroup, where that folder is writable), and the whole cgroup is
killed (`cgroup.kill`, or each process it lists on kernels before 5.14): a process cannot leave
a cgroup without the right to write another one's `cgroup.procs` (HOOK-015). Where there is no
writable cgroup v2 (cgroup v1 only, a read-only /sys/fs/cgroup, a login session's scope owned
by root) a hook gets its process group alone, and a process that leaves it outlives the hook.

The child enters its cgroup between fork and exec (`enter`, Popen's preexec_fn: a write of "0"
to `cgroup.procs`), so nothing the hook runs starts outside it. A supervisor runs one hook at a
time, with no other thread holding a lock at that moment, which is what preexec_fn needs.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time

CGROUP_ENV = "SWAMP_HOOK_CGROUP"  # "off": process groups only (a machine whose cgroups misbehave)
EMPTY_SECONDS = 2.0  # how long a kill waits for the cgroup's processes to be gone
_sequence = itertools.count()


def cgroup_dir() -> str | None:
    """The folder of this process's cgroup v2, or None when there is none to be found."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as lines:
            path = next((line.rstrip("\n")[3:] for line in lines if line.startswith("0::")), None)
        if path is None or not path.startswith("/"):
            return None
        with open("/proc/self/mountinfo", encoding="utf-8") as mounts:
            for mount in mounts:
                fields, _, kind = mount.partition(" - ")
                parts = fields.split(" ")
                if kind.split(" ")[0] != "cgroup2" or len(parts) < 5:
                    continue
                root, point = parts[3], parts[4].replace("\\040", " ")
                if root != "/" and not (path == root or path.startswith(root + "/")):
                    continue
                inside = path if root == "/" else path[len(root) :]
                return point.rstrip("/") + inside.rstrip("/")
    except OSError:
        return None
    return None


class Cage:
    """A cgroup of its own for one hook: `enter` (in the child), `kill`, `remove`."""

    def __init__(self, path: str):
        self.path = path
        self._procs = f"{path}/cgroup.procs".encode()

    @classmethod
    def make(cls) -> Cage | None:
        """A new empty cgroup under this process's, or None where the machine offers none."""
        if os.environ.get(CGROUP_ENV, "").lower() in ("off", "0", "no"):
            return None
        parent = cgroup_dir()
        if parent is None:
            return None
        path = f"{parent}/swamp-hook-{os.getpid()}-{next(_sequence)}"
        try:
            os.mkdir(path)
        except OSError:
            return None
        if not os.path.exists(f"{path}/cgroup.procs"):
            with contextlib.suppress(OSError):
                os.rmdir(path)
            return None
        return cls(path)

    def enter(self) -> None:
        """Moves the calling process into the cgroup (run in the child, before exec)."""
        fd = os.open(self._procs, os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)

    def pids(self) -> list[int]:
        try:
            with open(self._procs, encoding="ascii") as procs:
                return [int(line) for line in procs if line.strip()]
        except (OSError, ValueError):
            return []

    def signal(self, sig: int) -> None:
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, sig)

    def kill(self) -> None:
        """Kills every process in the cgroup and waits (a bounded while) until none is left."""
        try:
            with open(f"{self.path}/cgroup.kill", "w", encoding="ascii") as kill:
                kill.write("1")
        except OSError:  # a kernel before 5.14: one by one, again until none is left
            pass
        deadline = time.monotonic() + EMPTY_SECONDS
        while self.pids() and time.monotonic() < deadline:
            self.signal(signal.SIGKILL)
            time.sleep(0.005)

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.rmdir(self.path)
