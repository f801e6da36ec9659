"""`repo init` makes the same tree wherever it runs, so the conformance runners' `--reuse-init`
(FORMAT.md §4, scripts/test) may copy one repository's tree to every scenario."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SWAMP = str(Path(sys.executable).with_name("swamp"))


def tree(root: Path) -> dict[str, tuple[int, bytes | str | None]]:
    found: dict[str, tuple[int, bytes | str | None]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            info = path.lstat()
            if path.is_symlink():
                content: bytes | str | None = os.readlink(path)
            elif path.is_file():
                content = path.read_bytes()
            else:
                content = None
            found[str(path.relative_to(root))] = (info.st_mode, content)
    return found


def test_repo_init_makes_the_same_tree_in_any_folder_and_home(tmp_path: Path) -> None:
    trees = []
    for n in range(2):
        repo, home = tmp_path / f"somewhere-{n}" / "repo", tmp_path / f"home-{n}"
        repo.mkdir(parents=True)
        home.mkdir()
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
        subprocess.run([SWAMP, "repo", "init", "."], cwd=repo, env=env, check=True, capture_output=True)
        trees.append(tree(repo))
    assert trees[0] and trees[0] == trees[1]
    contents = [c for _, c in trees[0].values() if isinstance(c, bytes)]
    assert not any(str(tmp_path).encode() in content for content in contents)
