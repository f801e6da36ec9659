"""swamp serve."""

from __future__ import annotations

from ..domain.errors import SwampError
from .common import (
    DURATION,
    _repo_dir,
    click,
)
from .output import print_error

# -- serve -------------------------------------------------------------------------------------------


@click.command("serve")
@click.option(
    "--socket",
    "socket_path",
    type=click.Path(),  # what stands at PATH is checked by serve (socket_path_taken)
    help="Also listen on this Unix socket; put it in a directory only you can write, such as "
    "$XDG_RUNTIME_DIR (not /tmp).",
)
@click.option(
    "--socket-access",
    metavar="ACCESS",
    callback=lambda ctx, param, value: _socket_access(value),
    help="Let other accounts connect to --socket: group:NAME, the members of group NAME (socket "
    "mode 0660, its group NAME); any, every account (0666). Default: only serve's own account "
    "(0600). Other accounts may only read and answer; serve's own account may do everything.",
)
@click.option(
    "--max-runs", type=click.IntRange(min=1), metavar="N", help="At most N runs executing at once (N ≥ 1)."
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    metavar="N",
    default=256,
    show_default=True,
    help="At most N --socket connections open at once; the next is refused with too_many_requests.",
)
@click.option(
    "--auto-continue",
    is_flag=True,
    help="Resume a run once its last wait is settled, by whichever process or host (serve follows "
    "the store's events); at start, resume the runs answered while no serve ran.",
)
@click.option(
    "--enforce-deadlines",
    is_flag=True,
    help="Fail expired waits at their deadline (wait_timeout), and say so in the store (waits shows it).",
)
@click.option(
    "--grace",
    metavar="DURATION",
    type=DURATION,
    default=10.0,
    show_default=True,
    help="How long running steps may take to finish on SIGTERM/SIGINT (seconds, or 30s...).",
)
@click.option("--log-file", type=click.Path(dir_okay=False), help="Write logs here instead of stderr.")
@click.option(
    "--repo-dir", type=click.Path(file_okay=False), metavar="DIR", help="The default repository for requests."
)
@click.pass_context
def serve(
    ctx: click.Context,
    socket_path: str | None,
    max_runs: int | None,
    max_connections: int,
    auto_continue: bool,
    enforce_deadlines: bool,
    grace: float,
    log_file: str | None,
    repo_dir: str | None,
    socket_access: tuple[int | None, bool] | None,
) -> None:
    """Serve JSON-lines requests on stdin/stdout (and --socket) until EOF or SIGTERM.

    \b
    Examples:
      swamp serve < requests.jsonl
      swamp serve --socket "$XDG_RUNTIME_DIR/swamp.sock" --enforce-deadlines --auto-continue
      SWAMP_STORE_URL=service=swamp swamp serve --auto-continue --enforce-deadlines  # one per host
      swamp serve --socket /run/swamp/release.sock --socket-access group:release --auto-continue

    With --socket-access, other accounts connect (`swamp --connect PATH ...`) and may read and
    answer (waits, wait show, watch, history, events, signal, approve, reject) as themselves;
    anything else they ask is permission_denied. They need to reach the socket too: its folder
    must let them in (x for the group, say /run/swamp owned by serve's account, mode 0750, group
    NAME).

    Several serves may follow one store (PostgreSQL shared by several hosts, or one repository):
    each run is resumed once and each deadline enforced once, whichever serve gets there.
    A serve with --enforce-deadlines says so in the store; `swamp workflow waits` shows it. To
    keep one running at boot under systemd: swamp service install.
    """
    from ..protocol.serve import ServeOptions, run_server

    if socket_access is not None and not socket_path:
        raise click.UsageError("--socket-access says who may connect to --socket; give --socket PATH too")
    group, anyone = socket_access or (None, False)
    options = ServeOptions(
        repo_dir=_repo_dir(ctx, repo_dir),
        socket_path=socket_path,
        socket_group=group,
        socket_any=anyone,
        max_runs=max_runs,
        max_connections=max_connections,
        auto_continue=auto_continue,
        enforce_deadlines=enforce_deadlines,
        grace=grace,
        log_file=log_file,
    )
    try:
        ctx.exit(run_server(options))
    except SwampError as exc:
        print_error(exc, False)
        ctx.exit(exc.exit_code)


def _socket_access(value: str | None) -> tuple[int | None, bool] | None:
    """--socket-access: (the group's ID, False) for group:NAME, (None, True) for any (ACCESS-070,
    ACCESS-071)."""
    if value is None:
        return None
    import os
    import socket

    if not hasattr(socket, "SO_PEERCRED"):  # without it, a peer's account cannot be known
        raise click.BadParameter(
            "other accounts can connect only where the kernel names each peer (SO_PEERCRED, Linux); "
            "leave it out here",
            param_hint="--socket-access",
        )
    if value == "any":
        return None, True
    name = value[len("group:") :] if value.startswith("group:") else ""
    if not name:
        raise click.BadParameter(
            f"{value!r} is not group:NAME or any (for example group:release)", param_hint="--socket-access"
        )
    import grp

    try:
        gid = grp.getgrnam(name).gr_gid
    except KeyError:
        raise click.BadParameter(
            f"there is no group {name!r} on this host; create it (groupadd {name}) or name another",
            param_hint="--socket-access",
        ) from None
    if os.geteuid() != 0 and gid not in (os.getegid(), *os.getgroups()):
        raise click.BadParameter(
            f"serve's account is not a member of group {name!r}, so it cannot give the socket to "
            f"it; add it (usermod -aG {name} ACCOUNT) and start serve from a new login",
            param_hint="--socket-access",
        )
    return gid, False
