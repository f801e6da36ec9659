"""The bad-input corpus (payloads.yaml, wait_ids.yaml, frames.yaml, workflows.yaml in this folder).

Every case expects one specific code, no traceback, and nothing written: a refused signal leaves
its wait's record byte-identical, a refused workflow creates no run record, a wait ID creates no
file. The cases run once per session through real swamp processes (scripts/reliability_corpus.py);
each case is then its own test. Cases marked `bug:` show a known defect and are strict xfails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import reliability_corpus as corpus  # noqa: E402
import reliability_kit as kit  # noqa: E402
from helpers import built_once  # noqa: E402

CASES = corpus.load_cases()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, corpus.CaseResult]:
    def run() -> dict[str, corpus.CaseResult]:
        with kit.scratch(tmp_path_factory.mktemp("corpus")) as base:
            return corpus.run_corpus(base, CASES)

    return built_once(tmp_path_factory, "bad-input-corpus", run)


def _param(case: corpus.Case) -> object:
    marks = [pytest.mark.xfail(strict=True, reason="BUG: " + " ".join(case.bug.split()))] if case.bug else []
    return pytest.param(case.id, id=case.id, marks=marks)


@pytest.mark.parametrize("case_id", [_param(c) for c in CASES])
def test_case(results: dict[str, corpus.CaseResult], case_id: str) -> None:
    result = results[case_id]
    assert result.ok, f"{case_id} got {result.got}: " + "; ".join(result.problems)


def test_the_corpus_is_broad() -> None:
    """At least 150 cases, each naming the one code it expects, over every kind of input."""
    assert len(CASES) >= 150
    kinds = {c.kind for c in CASES}
    assert kinds == {"payload", "wait_id", "frame", "workflow"}
    for case in CASES:
        expected = "wait_not_found" if case.kind == "wait_id" else case.spec.get("expect", "workflow_invalid")
        assert isinstance(expected, str) and expected, case.id
        if case.kind == "wait_id":
            assert case.spec["reason"] in ("malformed", "too_short", "unknown", "reset"), case.id


ALIAS_BOMB_DEFAULT = """\
id: 0c0c0c0c-0000-4000-8000-0000000000bb
name: bomb-default
jobs:
  - name: main
    steps:
      - name: s
        task:
          type: wait_for_signal
          timeout: 5
          schema:
            default: {LISTS}
"""


def test_an_alias_bomb_under_the_alias_limit_is_refused(tmp_path_factory: pytest.TempPathFactory) -> None:
    levels = ['x0: &x0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    levels += [f"x{i}: &x{i} [" + ",".join([f"*x{i - 1}"] * 9) + "]" for i in range(1, 6)]
    with kit.scratch(tmp_path_factory.mktemp("bomb")) as base:
        root = kit.init_repo(base / "repo")
        text = ALIAS_BOMB_DEFAULT.replace("{LISTS}", "{" + ", ".join(levels) + "}")
        (root / "workflows" / "workflow-bomb-default.yaml").write_text(text, encoding="utf-8")
        try:
            result = kit.cli(root, "workflow", "run", "bomb-default", "--json", timeout=5)
        except Exception as exc:  # subprocess.TimeoutExpired: still expanding
            pytest.fail(f"workflow run did not answer within 5 s: {type(exc).__name__}")
        assert kit.error_code(result) == "workflow_invalid", result.out[:300]
        assert kit.record_files(root) == []


def test_a_non_finite_claim_timeout_does_not_hang(tmp_path_factory: pytest.TempPathFactory) -> None:
    import subprocess

    from swamp.store.claim import RunClaim
    from swamp.store.repo import find_repo

    with kit.scratch(tmp_path_factory.mktemp("nan")) as base:
        root = kit.fresh(base, "nan")
        run = kit.start_run(root, kit.one_wait_workflow(root))
        wait_id = run["waits"][0]["waitId"]
        request = {"waitId": wait_id, "payload": {"n": 1}, "claimTimeout": -7}
        line = json.dumps({"type": "workflow.signal", "id": "n", "payload": request}).replace("-7", "NaN")
        with RunClaim(find_repo(str(root)), run["id"]):  # someone else is busy with the run
            try:
                result = kit.cli(root, "--jsonl", input=line.encode() + b"\n", timeout=4)
            except subprocess.TimeoutExpired:
                pytest.fail("the request is still waiting for the claim after 4 s")
        assert (
            '"type":"error"' in result.out
            and "claim" in result.out.lower()
            or "invalid_request" in result.out
        )


def test_a_wrongly_accepted_case_fails_under_its_own_name(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each case signals a wait of its own: a payload that is taken when it should be refused
    fails that case alone, not the cases beside it (which once shared its wait and record)."""
    liar = corpus.Case("payload", {"id": "liar", "text": "1", "expect": "payload_malformed"})
    beside = [
        c
        for c in CASES
        if c.kind == "payload"
        and c.spec.get("wait", "any") == "any"
        and c.spec.get("via", "jsonl") == "jsonl"
    ]
    others = [c for c in beside if c.spec["expect"] != "accepted"][:4] + [
        c for c in beside if c.spec["expect"] == "accepted"
    ][:1]
    with kit.scratch(tmp_path_factory.mktemp("liar")) as base:
        results = corpus.run_corpus(base, [liar, *others])
    assert not results[liar.id].ok and results[liar.id].got == "accepted"
    for case in others:
        assert results[case.id].ok, (
            f"{case.id} failed beside a wrongly accepted case: {results[case.id].problems}"
        )
