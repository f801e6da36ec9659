"""What `resume` names when the workflow file changed since the run saved its definition (RESUME-022)."""

from __future__ import annotations

import copy
from typing import Any

from swamp.domain.drift import definition_changes, definition_digest


def step(name: str) -> dict[str, Any]:
    return {"name": name, "task": {"type": "model_method", "modelIdOrName": "sh", "methodName": "execute"}}


def definition() -> dict[str, Any]:
    return {
        "id": "10000000-0000-4000-8000-000000000001",
        "name": "w",
        "jobs": [{"name": "main", "steps": [step("a"), step("b")]}, {"name": "other", "steps": [step("a")]}],
    }


def test_the_same_definition_in_another_key_order_is_no_change():
    saved = definition()
    reordered = {key: saved[key] for key in reversed(list(saved))}
    assert definition_digest(saved) == definition_digest(reordered)
    assert definition_changes(saved, reordered) == []


def test_changes_are_named_by_job_and_step():
    saved, current = definition(), definition()
    current["jobs"][0]["steps"][1]["task"]["methodName"] = "other"
    current["jobs"][0]["steps"].append(step("c"))
    del current["jobs"][1]
    current["jobs"].append({"name": "new", "steps": []})
    current["inputs"] = {"type": "object"}
    assert definition_changes(saved, current) == [
        "workflow inputs",
        "step 'b' of job 'main'",
        "step 'c' added to job 'main'",
        "job 'other' removed",
        "job 'new' added",
    ]


def test_reordered_steps_are_a_change():
    saved = definition()
    current = copy.deepcopy(saved)
    current["jobs"][0]["steps"].reverse()
    assert definition_changes(saved, current) == ["the order of the steps of job 'main'"]


def test_many_changes_are_counted_past_five():
    saved = definition()
    current = copy.deepcopy(saved)
    current["jobs"][0]["steps"] = [step(f"s{i}") for i in range(8)]
    changes = definition_changes(saved, current)
    assert len(changes) == 6 and changes[-1] == "5 more"
