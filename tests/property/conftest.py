"""Property tests (hypothesis): the profiles, and a repository shared by a module's examples."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import conftest_hypothesis  # noqa: E402,F401  (registers and loads the profiles)
import reliability_kit as kit  # noqa: E402


@pytest.fixture(scope="module")
def kit_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One repository per module (on tmpfs when there is one), made in process; examples add
    uniquely named workflows."""
    with kit.scratch(tmp_path_factory.mktemp("prop")) as base:
        yield kit.init_repo(base / "repo")
