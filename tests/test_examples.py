"""The example repositories load whole: every model definition and workflow in them is valid.

scripts/demo runs examples/release end to end, but the tests do not run the demo; a model file
that no longer loads would otherwise be found only by a person trying the example.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import run_swamp

ROOT = Path(__file__).parent.parent / "examples"
EXAMPLES = sorted(p for p in ROOT.iterdir() if (p / "workflows").is_dir())


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_models_and_workflows_load(example: Path, tmp_path: Path) -> None:
    repo = tmp_path / example.name
    shutil.copytree(example, repo)
    assert run_swamp("repo", "init", ".", "--json", cwd=repo).code == 0
    models = run_swamp("model", "list", "--json", cwd=repo)
    assert models.code == 0, models.stderr
    assert models.json["problems"] == [], models.json["problems"]
    validated = run_swamp("workflow", "validate", "--json", cwd=repo)
    assert validated.code == 0, validated.stdout
    assert validated.json["totalFailed"] == 0
