"""What `swamp serve` is started with (cli/serve.py fills it from the command line)."""

from __future__ import annotations

from dataclasses import dataclass

MAX_CONNECTIONS = 256  # --max-connections' default: a few descriptors and two threads each


@dataclass
class ServeOptions:
    repo_dir: str | None = None
    socket_path: str | None = None
    # Who else may connect to the socket (ACCESS-070): None, serve's own account alone (0600);
    # a group's ID (its members, 0660); SOCKET_ANY (every account, 0666).
    socket_group: int | None = None
    socket_any: bool = False
    max_runs: int | None = None
    max_connections: int = MAX_CONNECTIONS
    auto_continue: bool = False
    enforce_deadlines: bool = False
    grace: float = 10.0
    deadline_interval: float = 1.0
    log_file: str | None = None
