"""scripts/install puts `swamp` on the PATH of the next login shell (issue 30, item 2), into a
throwaway HOME, and --uninstall takes back exactly what it added."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="scripts/install is a bash script")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout of scripts/install and scripts/_venv.sh whose .venv is made already (a stand-in
    swamp), so that the test never installs into, or waits on, the project's own .venv."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    for name in ("install", "_venv.sh"):
        shutil.copy2(ROOT / "scripts" / name, root / "scripts" / name)
    (root / "pyproject.toml").write_text("")
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(sys.executable)
    (venv_bin / "swamp").write_text('#!/bin/sh\necho "swamp, version 0.0.0-test"\n')
    (venv_bin / "swamp").chmod(0o755)
    stamp = root / ".venv" / ".installed"
    stamp.write_text("")
    os.utime(stamp, (time.time() + 1, time.time() + 1))  # newer than pyproject.toml: nothing to install
    return root


def _env(home: Path) -> dict[str, str]:
    # this shell's PATH without the venv: what a user has before installing
    path = ":".join(p for p in os.environ.get("PATH", "").split(":") if not p.startswith(str(ROOT)))
    env = {k: v for k, v in os.environ.items() if k not in {"XDG_BIN_HOME", "VIRTUAL_ENV"}}
    return env | {"HOME": str(home), "PATH": path or "/usr/bin:/bin"}


def _install(checkout: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(checkout / "scripts" / "install"), *args],
        env=_env(home), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _login_shell(home: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["env", "-i", f"HOME={home}", "TERM=dumb", "bash", "-lc", command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_install_links_swamp_for_the_next_login_shell_and_uninstall_undoes_it(
    tmp_path: Path, checkout: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = _install(checkout, home)
    assert done.returncode == 0, done.stderr
    link = home / ".local" / "bin" / "swamp"
    assert link.is_symlink()
    assert Path(os.readlink(link)) == checkout / ".venv" / "bin" / "swamp"
    # no ~/.profile to rely on: one marked line added, and the advice for the current shell
    profile = (home / ".profile").read_text()
    assert "scripts/install --uninstall" in profile
    assert f'export PATH="{home}/.local/bin:$PATH"' in done.stdout
    assert "scripts/install --uninstall" in done.stdout

    found = _login_shell(home, "command -v swamp && swamp --version")
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[0] == str(link)
    assert found.stdout.splitlines()[1] == "swamp, version 0.0.0-test"

    again = _install(checkout, home)  # idempotent: no second PATH line
    assert again.returncode == 0, again.stderr
    assert (home / ".profile").read_text() == profile

    undone = _install(checkout, home, "--uninstall")
    assert undone.returncode == 0, undone.stderr
    assert not link.exists() and not link.is_symlink()
    assert not (home / ".profile").exists()  # it held only our line
    assert _login_shell(home, "command -v swamp").stdout.strip() != str(link)


def test_install_keeps_a_profile_that_already_adds_local_bin(tmp_path: Path, checkout: Path) -> None:
    """Debian's ~/.profile puts ~/.local/bin on PATH when it exists: nothing is appended to it."""
    home = tmp_path / "home"
    home.mkdir()
    debian = 'if [ -d "$HOME/.local/bin" ] ; then\n    PATH="$HOME/.local/bin:$PATH"\nfi\n'
    (home / ".profile").write_text(debian)
    done = _install(checkout, home)
    assert done.returncode == 0, done.stderr
    assert (home / ".profile").read_text() == debian
    assert _login_shell(home, "swamp --version").stdout == "swamp, version 0.0.0-test\n"
    assert _install(checkout, home, "--uninstall").returncode == 0
    assert (home / ".profile").read_text() == debian


def test_install_refuses_to_replace_a_file_that_is_not_its_link(tmp_path: Path, checkout: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "swamp").write_text("#!/bin/sh\n")
    done = _install(checkout, home)
    assert done.returncode == 1
    assert "is not a link" in done.stderr and "XDG_BIN_HOME" in done.stderr
    assert (home / ".local" / "bin" / "swamp").read_text() == "#!/bin/sh\n"
