"""The mutants (mutants/*.yaml, run by scripts/mutants) stay applicable: each is well-formed, each
`find` occurs exactly once in today's source, and the mutated files still compile. A refactor that
moves the code a mutant edits fails here, naming the mutant, instead of the mutant going stale
unnoticed (scripts/mutants would report it `stale` and fail too, but only when it runs)."""

from __future__ import annotations

import importlib.util
from importlib.machinery import SourceFileLoader
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _script():
    loader = SourceFileLoader("scripts_mutants", str(ROOT / "scripts" / "mutants"))
    spec = importlib.util.spec_from_loader("scripts_mutants", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


MUTANTS = _script()
FILES = sorted((ROOT / "mutants").glob("*.yaml"))


def test_there_are_enough_mutants_with_unique_ids():
    ids = [MUTANTS.load_mutant(path)["id"] for path in FILES]
    assert len(ids) >= 28
    assert len(set(ids)) == len(ids), "two mutants share an id"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_mutant_applies_to_the_current_source_and_compiles(path):
    mutant = MUTANTS.load_mutant(path)
    try:
        texts = MUTANTS.apply_edits(mutant, ROOT)
    except MUTANTS.MutantError as exc:
        pytest.fail(f"mutant {path.name} is stale: {exc}; rewrite its find/replace for today's code")
    for rel, text in texts.items():
        assert text != (ROOT / rel).read_text(encoding="utf-8")
        compile(text, f"{rel} (mutant {path.name})", "exec")
    assert MUTANTS.citing(mutant["requirements"]), f"{path.name}: no scenario cites {mutant['requirements']}"


def test_a_find_that_does_not_occur_exactly_once_is_reported_stale():
    edit = {"file": "swamp/domain/run.py", "replace": "x"}
    with pytest.raises(
        MUTANTS.MutantError, match=r"edits\[0\]: the find text occurs 0 times in swamp/domain/run.py"
    ):
        MUTANTS.apply_edits({"edits": [{**edit, "find": "no such text in swamp"}]}, ROOT)
    with pytest.raises(MUTANTS.MutantError, match=r"occurs [2-9]\d* times"):
        MUTANTS.apply_edits({"edits": [{**edit, "find": "def "}]}, ROOT)


def test_a_malformed_mutant_is_refused(tmp_path):
    path = tmp_path / "99-bad.yaml"
    path.write_text(
        "id: bad\nrule: r\nrequirements: [WAIT-016]\nedits: [{file: ../etc/passwd, find: a, replace: b}]\n"
    )
    with pytest.raises(MUTANTS.MutantError, match="must be a path under swamp/"):
        MUTANTS.load_mutant(path)
    path.write_text("id: bad\nrule: r\nrequirement: [WAIT-016]\nedits: []\n")
    with pytest.raises(MUTANTS.MutantError, match="unknown keys"):
        MUTANTS.load_mutant(path)
