"""The hand-written workflow reader answers as the pydantic models it replaced did, byte for byte.

tests/corpus/workflow-models.json holds what those models made of 584 workflow documents (every
workflow file of the scenarios and examples/, the bad-input corpus, the tables of the workflow
tests, oddities) and of 17250 mutations of them (each key removed, each value replaced by null,
"", 0, -1, 2.5, 2.0, true, a word, a list, a mapping, [], {}, infinity, NaN):
tests/corpus/make_workflow_models.py wrote it, once, with pydantic. For a valid document, the
run-record form (`Workflow.to_json()`, which drift detection compares) must serialize to the same
JSON text; for an invalid one, the problems (paths, messages, order) and the one-line message with
its "(and N more)" must be the same. Where the old reader crashed (a task `type` that is a list, a
condition's `conditions` that is a number), the new one must refuse the file as invalid.

Deliberate changes since the recording are edited into the corpus: the task keys `answerers` (a
wait) and `approvers` (a gate) of issue 28 end the lists of valid task keys, and the unknown key of
gate-task-validation's workflow is `reviewers`, as `approvers` became a key.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from swamp.domain.definition import Workflow, parse_workflow
from swamp.domain.errors import WorkflowInvalid
from swamp.store.yamlio import load_yaml

CORPUS = json.loads((Path(__file__).parent / "corpus" / "workflow-models.json").read_text(encoding="utf-8"))
STRINGS: list[str] = CORPUS["strings"]
SOURCE = "workflows/workflow-case.yaml"


def answer(raw: Any) -> dict[str, Any]:
    try:
        workflow = parse_workflow(raw, SOURCE)
    except WorkflowInvalid as exc:
        return {"problems": exc.details["problems"], "message": str(exc)}
    return {"dump": json.dumps(workflow.to_json())}


def expected(case: dict[str, Any]) -> dict[str, Any]:
    if "problems" in case:
        return {"problems": [STRINGS[i] for i in case["problems"]], "message": STRINGS[case["message"]]}
    return {k: case[k] for k in ("dump", "crash") if k in case}


def compare(got: dict[str, Any], want: dict[str, Any], digest: bool) -> bool:
    if "crash" in want:
        return "problems" in got
    if "dump" in want and "dump" in got and digest:
        return hashlib.sha256(got["dump"].encode()).hexdigest()[:20] == want["dump"]
    return got == want


def test_every_document_reads_as_before() -> None:
    wrong = {}
    for case in CORPUS["documents"]:
        got, want = answer(load_yaml(case["yaml"])), expected(case)
        if not compare(got, want, digest=False):
            wrong[case["id"]] = {"got": got, "want": want}
    assert not wrong, json.dumps(dict(list(wrong.items())[:5]), indent=1)[:6000] + f"\n{len(wrong)} differ"


def mutate(raw: Any, path: list[Any], change: list[Any]) -> Any:
    doc = copy.deepcopy(raw)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    if change[0] == "del":
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(change[1])
    return doc


def test_every_mutation_reads_as_before() -> None:
    bases = {n: load_yaml(case["yaml"]) for n, case in enumerate(CORPUS["documents"])}
    wrong = {}
    for base, path, change, result in CORPUS["mutations"]:
        got = answer(mutate(bases[base], path, change))
        want = expected(result)
        if not compare(got, want, digest=True):
            label = f"{CORPUS['documents'][base]['id']} {path} {change}"
            wrong[label] = {"got": got, "want": want}
    assert not wrong, json.dumps(dict(list(wrong.items())[:5]), indent=1)[:6000] + f"\n{len(wrong)} differ"


def test_the_corpus_holds_good_and_bad_files_of_every_kind() -> None:
    documents, mutations = CORPUS["documents"], CORPUS["mutations"]
    assert len(documents) >= 500 and len(mutations) >= 10000
    assert sum("dump" in d for d in documents) >= 200 and sum("problems" in d for d in documents) >= 150
    assert sum("dump" in m[3] for m in mutations) >= 500
    shown = " ".join(STRINGS)
    for words in (
        "Field required",
        "Input should be a valid string",
        "String should have at least 1 character",
        "Input should be greater than 0",
        "Input should be a valid dictionary or instance of",
        "Tuple should have at least 1 item",
        "Input should be a valid tuple",
        "(and ",
    ):
        assert words in shown, words


def test_a_run_record_definition_reads_back_to_the_same_workflow() -> None:
    """`Workflow.from_json` of a stored definition (JSON text, read back) gives the same definition."""
    for case in CORPUS["documents"]:
        if "dump" in case:
            again = Workflow.from_json(json.loads(case["dump"]))
            assert json.dumps(again.to_json()) == case["dump"], case["id"]


def test_a_broken_definition_is_refused_with_its_problems() -> None:
    with pytest.raises(WorkflowInvalid) as info:
        Workflow.from_json({"id": "x", "name": "n", "jobs": []})
    assert info.value.details["problems"] == [
        "id: String should match pattern "
        "'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'",
        "jobs: Tuple should have at least 1 item after validation, not 0",
    ]
