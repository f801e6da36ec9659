"""scripts/install puts `swamp` on the PATH of the next login shell (issue 30, item 2), into a
throwaway HOME, and --uninstall takes back exactly what it added."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALL = ROOT / "scripts" / "install"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="scripts/install is a bash script")


def _env(home: Path) -> dict[str, str]:
    # this shell's PATH without the venv: what a user has before installing
    path = ":".join(p for p in os.environ.get("PATH", "").split(":") if not p.startswith(str(ROOT)))
    env = {k: v for k, v in os.environ.items() if k not in {"XDG_BIN_HOME", "VIRTUAL_ENV"}}
    return env | {"HOME": str(home), "PATH": path or "/usr/bin:/bin"}


def _install(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(INSTALL), *args], env=_env(home), capture_output=True, text=True, timeout=120, check=False
    )


def _login_shell(home: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["env", "-i", f"HOME={home}", "TERM=dumb", "bash", "-lc", command],
        capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
    )


def test_install_links_swamp_for_the_next_login_shell_and_uninstall_undoes_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = _install(home)
    assert done.returncode == 0, done.stderr
    link = home / ".local" / "bin" / "swamp"
    assert link.is_symlink()
    assert Path(os.readlink(link)) == ROOT / ".venv" / "bin" / "swamp"
    # no ~/.profile to rely on: one marked line added, and the advice for the current shell
    profile = (home / ".profile").read_text()
    assert "scripts/install --uninstall" in profile
    assert f'export PATH="{home}/.local/bin:$PATH"' in done.stdout
    assert "scripts/install --uninstall" in done.stdout

    found = _login_shell(home, "command -v swamp && swamp --version")
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[0] == str(link)
    assert found.stdout.splitlines()[1].startswith("swamp, version ")

    again = _install(home)  # idempotent: no second PATH line
    assert again.returncode == 0, again.stderr
    assert (home / ".profile").read_text() == profile

    undone = _install(home, "--uninstall")
    assert undone.returncode == 0, undone.stderr
    assert not link.exists() and not link.is_symlink()
    assert not (home / ".profile").exists()  # it held only our line
    assert _login_shell(home, "command -v swamp").stdout.strip() != str(link)


def test_install_keeps_a_profile_that_already_adds_local_bin(tmp_path: Path) -> None:
    """Debian's ~/.profile puts ~/.local/bin on PATH when it exists: nothing is appended to it."""
    home = tmp_path / "home"
    home.mkdir()
    debian = 'if [ -d "$HOME/.local/bin" ] ; then\n    PATH="$HOME/.local/bin:$PATH"\nfi\n'
    (home / ".profile").write_text(debian)
    done = _install(home)
    assert done.returncode == 0, done.stderr
    assert (home / ".profile").read_text() == debian
    assert _login_shell(home, "swamp --version").stdout.startswith("swamp, version ")
    assert _install(home, "--uninstall").returncode == 0
    assert (home / ".profile").read_text() == debian


def test_install_refuses_to_replace_a_file_that_is_not_its_link(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "swamp").write_text("#!/bin/sh\n")
    done = _install(home)
    assert done.returncode == 1
    assert "is not a link" in done.stderr and "XDG_BIN_HOME" in done.stderr
    assert (home / ".local" / "bin" / "swamp").read_text() == "#!/bin/sh\n"
