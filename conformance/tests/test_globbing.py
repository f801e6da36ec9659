"""Globs of `files` checks mean the same in every runner (FORMAT.md), not what pathlib happens to do."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from swamp_conformance_runner.globbing import glob


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel in ("a/b/c.json", "a/.hidden.json", "a/x.yaml", "top.json", ".dot/d.json", "outside/o.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    os.symlink(tmp_path / "outside", tmp_path / "a" / "link")
    return tmp_path


def names(root: Path, pattern: str) -> list[str]:
    return [p.relative_to(root).as_posix() for p in glob(root, pattern)]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("**/*.json", [".dot/d.json", "a/.hidden.json", "a/b/c.json", "outside/o.json", "top.json"]),
        ("a/*", ["a/.hidden.json", "a/b", "a/link", "a/x.yaml"]),  # dotfiles and the symlink itself
        ("a/**", ["a", "a/.hidden.json", "a/b", "a/b/c.json", "a/link", "a/x.yaml"]),
        ("a/**/c.json", ["a/b/c.json"]),
        ("a/?.yaml", ["a/x.yaml"]),
        ("a/[!x]*", ["a/.hidden.json", "a/b", "a/link"]),
        ("*.json", ["top.json"]),
        ("nothing/*", []),
    ],
)
def test_glob_semantics(tree: Path, pattern: str, expected: list[str]) -> None:
    assert names(tree, pattern) == expected


def test_symlinked_directories_are_not_followed(tree: Path) -> None:
    assert "a/link/o.json" not in names(tree, "**/*.json")
