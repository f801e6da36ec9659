"""swamp service install|status|uninstall: a systemd unit that keeps `swamp serve --auto-continue
--enforce-deadlines` running for one repository, so deadlines act and answered runs continue
without anyone typing a command (spec/service.md).

The unit is plain text built here from absolute paths (the swamp executable, the repository), so
`--dry-run` shows exactly what would be written and a unit works whatever the service's working
directory and PATH. Its name is the repository's path escaped as `systemd-escape --path` does,
so one repository has one unit, the same on every install. Where systemd is not running (a
container, a machine booted by another init), nothing is written: swamp says so and prints the
command to run under whatever supervises processes there.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ..domain.errors import ServiceSecret, ServiceUnavailable, SwampError
from .common import _repo_dir, click, output_options
from .output import out, print_error, print_json

SERVE_FLAGS = ("serve", "--auto-continue", "--enforce-deadlines")
# What the unit may pass on from the environment of `service install`: where the store is, and
# where libpq finds what it must not say in a unit file (a password: SERVICE-008).
PASSED_ON = ("SWAMP_STORE_URL", "PGSERVICEFILE", "PGPASSFILE")


def systemd_escape_path(path: str) -> str:
    """`systemd-escape --path PATH`: slashes trimmed and collapsed, then `/` becomes `-` and every
    byte outside [A-Za-z0-9:_.] (a leading `.` included) becomes `\\xNN`; `/` alone is `-`."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return "-"
    out_chars = []
    for i, byte in enumerate("/".join(parts).encode()):
        char = chr(byte)
        if char == "/":
            out_chars.append("-")
        elif (char.isascii() and (char.isalnum() or char in ":_.")) and not (i == 0 and char == "."):
            out_chars.append(char)
        else:
            out_chars.append(f"\\x{byte:02x}")
    return "".join(out_chars)


def unit_name(root: str) -> str:
    return f"swamp-{systemd_escape_path(root)}.service"


def executable() -> list[str]:
    """The swamp that runs this command, by absolute path: the `swamp` script when that is what
    was run, else this Python with `-m swamp`."""
    argv0 = sys.argv[0]
    if os.path.basename(argv0) == "swamp" and os.path.isfile(argv0):
        return [os.path.abspath(argv0)]
    return [os.path.abspath(sys.executable), "-m", "swamp"]


def _word(arg: str) -> str:
    """One argument of ExecStart, as systemd reads it back: `%` and `$` doubled (specifiers,
    variables), quoted when it holds a space, a quote or a backslash."""
    arg = arg.replace("%", "%%").replace("$", "$$")
    if any(c in arg for c in " \t\"'\\;") or not arg:
        return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return arg


def serve_command(root: str, socket: str) -> list[str]:
    return [*executable(), *SERVE_FLAGS, "--repo-dir", root, "--socket", socket]


def unit_text(root: str, *, user_unit: bool, account: str | None, environment: dict[str, str]) -> str:
    """The unit file (SERVICE-003): the exact text install writes and --dry-run prints."""
    command = serve_command(root, "%t/%N/serve.sock")
    exec_start = " ".join(
        [_word(a) for a in command[:-1]] + [command[-1]]  # the socket keeps its specifiers
    )
    lines = [
        f"# Written by swamp service install for the repository {root}.",
        "# Remove it with: swamp service uninstall" + (" --user" if user_unit else ""),
        "[Unit]",
        f"Description=swamp serve for {root.replace('%', '%%')} (deadlines and continuations by themselves)",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
    ]
    if account is not None:
        lines.append(f"User={account}")
    lines.append(f"WorkingDirectory={_word(root)}")
    for name, value in environment.items():
        lines.append(f"Environment={_word(f'{name}={value}')}")
    lines += [
        "RuntimeDirectory=%N",
        f"ExecStart={exec_start}",
        "Restart=on-failure",
        "RestartSec=5",
        "",
        "[Install]",
        f"WantedBy={'default.target' if user_unit else 'multi-user.target'}",
    ]
    return "\n".join(lines) + "\n"


def unit_dir(user_unit: bool) -> Path:
    if not user_unit:
        return Path("/etc/systemd/system")
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user"


def systemd_running() -> bool:
    """sd_booted(3): systemd is PID 1 exactly when /run/systemd/system is a directory."""
    import shutil

    return os.path.isdir("/run/systemd/system") and shutil.which("systemctl") is not None


def _pid1() -> str:
    try:
        return Path("/proc/1/comm").read_text().strip() or "unknown"
    except OSError:
        return "unknown"


def _unit_of(ctx: click.Context, repo_dir: str | None, user_unit: bool) -> tuple[str, str, Path]:
    """The repository's absolute path, its unit's name and where that unit goes (SERVICE-001,
    SERVICE-002, SERVICE-004)."""
    from ..store.repo import find_repo

    root = str(find_repo(_repo_dir(ctx, repo_dir)).root)
    name = unit_name(root)
    return root, name, unit_dir(user_unit) / name


def _environment() -> dict[str, str]:
    """What the unit passes on (SERVICE-007), refusing a password (SERVICE-008)."""
    chosen = {name: os.environ[name] for name in PASSED_ON if os.environ.get(name)}
    address = chosen.get("SWAMP_STORE_URL")
    if address:
        from ..store.pg.conninfo import Conninfo

        info = Conninfo(address)
        if info.secrets:
            raise ServiceSecret(
                "SWAMP_STORE_URL holds a password, and a unit file is readable by every account: "
                "nothing was written. Put the password in a libpq password file (~/.pgpass, or "
                "PGPASSFILE) or a service file (PGSERVICEFILE), give SWAMP_STORE_URL without it "
                "(for example service=swamp), and install again",
                {"variable": "SWAMP_STORE_URL", "address": info.shown},
            )
    return chosen


def _account(user_unit: bool, root: str) -> str | None:
    """A system unit runs as the account that owns the repository's .swamp (its runs' owner)."""
    if user_unit:
        return None
    import pwd

    uid = os.stat(Path(root) / ".swamp").st_uid if (Path(root) / ".swamp").exists() else os.stat(root).st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _systemctl(user_unit: bool, *args: str) -> tuple[int, str]:
    import subprocess

    command = ["systemctl", *(["--user"] if user_unit else []), *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done.returncode, (done.stdout + done.stderr).strip()


def _not_here(command: list[str]) -> ServiceUnavailable:
    import shlex

    shown = shlex.join(command)
    return ServiceUnavailable(
        f"systemd is not running here (PID 1 is {_pid1()}; no /run/systemd/system): nothing was "
        "installed. Under another supervisor (runit, s6, supervisord, a container's entry point) "
        f"keep this running and restart it when it fails: {shown} "
        "(or see the unit: swamp service install --dry-run)",
        {"command": command},
    )


@click.group("service")
def service() -> None:
    """Keep `swamp serve --auto-continue --enforce-deadlines` running for this repository under
    systemd, so waits fail at their deadline and answered runs continue with nobody typing.

    \b
    Examples:
      swamp service install --dry-run     # print the unit, write nothing
      sudo swamp service install          # a system unit, started at boot
      swamp service install --user        # a unit of your own account
      swamp service status
      swamp service uninstall
    """


def _scope_options(func: Any) -> Any:
    func = click.option(
        "--user", "user_unit", is_flag=True, help="A unit of your own account (systemctl --user)."
    )(func)
    return func


@service.command("install")
@_scope_options
@click.option("--dry-run", is_flag=True, help="Print the unit (and where it would go); write nothing.")
@output_options
@click.pass_context
def service_install(
    ctx: click.Context, user_unit: bool, dry_run: bool, as_json: bool, repo_dir: str | None
) -> None:
    """Write a systemd unit running swamp serve --auto-continue --enforce-deadlines for this
    repository, enable it and start it. A system unit (the default) needs root and runs as the
    repository's owner; --user installs one for your account.

    \b
    Examples:
      swamp service install --dry-run
      sudo swamp service install
      swamp service install --user && loginctl enable-linger "$USER"
    """
    from .common import _as_json

    use_json = _as_json(ctx, as_json)
    try:
        root, name, path = _unit_of(ctx, repo_dir, user_unit)
        text = unit_text(
            root, user_unit=user_unit, account=_account(user_unit, root), environment=_environment()
        )
        doc: dict[str, Any] = {
            "unit": name,
            "path": str(path),
            "scope": "user" if user_unit else "system",
            "repository": root,
            "command": serve_command(root, "%t/%N/serve.sock"),
            "text": text,
            "dryRun": dry_run,
            "installed": False,
        }
        if not dry_run:
            _install(user_unit, name, path, text, root)
            doc["installed"] = True
    except SwampError as exc:
        print_error(exc, use_json)
        ctx.exit(exc.exit_code)
    if use_json:
        print_json(doc)
    elif dry_run:
        click.echo(text, nl=False)
        click.echo(f"(--dry-run: nothing written; install writes this to {path})", err=True)
    else:
        flag = " --user" if user_unit else ""
        out(f"Installed {name} ({path}), enabled and started:")
        out(f"  swamp serve --auto-continue --enforce-deadlines for {root}")
        out(f"  Status: swamp service status{flag}; logs: journalctl{flag} -u {name}")
        out(f"  Remove: swamp service uninstall{flag}")


def _install(user_unit: bool, name: str, path: Path, text: str, root: str) -> None:
    if not user_unit and os.geteuid() != 0:  # SERVICE-009: whatever the host's init
        raise ServiceUnavailable(
            "a system unit is written to /etc/systemd/system, which needs root: run it with sudo, "
            "or install a unit of your own account with --user",
            {"path": str(path)},
        )
    if not systemd_running():
        raise _not_here(
            serve_command(root, f"{os.environ.get('XDG_RUNTIME_DIR') or '/run'}/{name[:-8]}.sock")
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(path.name + ".tmp")
        temp.write_text(text, encoding="utf-8")
        temp.chmod(0o644)
        temp.replace(path)
    except OSError as exc:
        raise ServiceUnavailable(f"could not write {path}: {exc.strerror}", {"path": str(path)}) from None
    for args in (("daemon-reload",), ("enable", "--now", name)):
        code, said = _systemctl(user_unit, *args)
        if code != 0:
            raise ServiceUnavailable(
                f"systemctl {' '.join(args)} failed ({said or f'exit {code}'}); the unit is at {path}: "
                "fix what systemctl says, then: swamp service install",
                {"path": str(path)},
            )


@service.command("status")
@_scope_options
@output_options
@click.pass_context
def service_status(ctx: click.Context, user_unit: bool, as_json: bool, repo_dir: str | None) -> None:
    """Whether this repository's unit is installed and running, and whether the store has a live
    serve enforcing deadlines (whichever started it).

    \b
    Examples:
      swamp service status
      swamp service status --user --json
    """
    from .common import _as_json

    use_json = _as_json(ctx, as_json)
    try:
        root, name, path = _unit_of(ctx, repo_dir, user_unit)
        from ..app.announcements import deadlines_enforced
        from ..app.context import App

        doc: dict[str, Any] = {
            "unit": name,
            "path": str(path),
            "scope": "user" if user_unit else "system",
            "repository": root,
            "installed": path.is_file(),
            "systemd": systemd_running(),
            "active": None,
            "enabled": None,
            "deadlineEnforced": deadlines_enforced(App.open(root)),
        }
        if doc["systemd"] and doc["installed"]:
            doc["active"] = _systemctl(user_unit, "is-active", name)[1] or None
            doc["enabled"] = _systemctl(user_unit, "is-enabled", name)[1] or None
    except SwampError as exc:
        print_error(exc, use_json)
        ctx.exit(exc.exit_code)
    if use_json:
        print_json(doc)
        return
    flag = " --user" if user_unit else ""
    if doc["installed"]:
        state = f"{doc['active']}, {doc['enabled']}" if doc["systemd"] else "systemd is not running here"
        out(f"{name}: installed at {path} ({state})")
    else:
        out(f"{name}: not installed; install it with: swamp service install{flag}")
    from .render import enforcement_lines

    enforcement_lines(doc["deadlineEnforced"])


@service.command("uninstall")
@_scope_options
@click.option("--dry-run", is_flag=True, help="Say what would be removed; change nothing.")
@output_options
@click.pass_context
def service_uninstall(
    ctx: click.Context, user_unit: bool, dry_run: bool, as_json: bool, repo_dir: str | None
) -> None:
    """Stop and disable this repository's unit and remove its file. Nothing installed is not an
    error: there is nothing to do.

    \b
    Examples:
      sudo swamp service uninstall
      swamp service uninstall --user --dry-run
    """
    from .common import _as_json

    use_json = _as_json(ctx, as_json)
    try:
        root, name, path = _unit_of(ctx, repo_dir, user_unit)
        doc: dict[str, Any] = {"unit": name, "path": str(path), "dryRun": dry_run, "removed": False}
        if path.is_file() and not dry_run:
            if systemd_running():
                _systemctl(user_unit, "disable", "--now", name)  # a unit already stopped is fine
            try:
                path.unlink()
            except OSError as exc:
                raise ServiceUnavailable(
                    f"could not remove {path}: {exc.strerror}", {"path": str(path)}
                ) from None
            if systemd_running():
                _systemctl(user_unit, "daemon-reload")
            doc["removed"] = True
    except SwampError as exc:
        print_error(exc, use_json)
        ctx.exit(exc.exit_code)
    if use_json:
        print_json(doc)
    elif doc["removed"]:
        out(f"Stopped, disabled and removed {name} ({path}).")
    elif path.is_file():
        out(f"--dry-run: would stop, disable and remove {name} ({path}).")
    else:
        out(f"{name} is not installed ({path}): nothing to remove.")
