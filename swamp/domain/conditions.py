"""The trigger-condition algebra of `dependsOn` entries.

Every leaf tests the status of the same referenced job or step (the entry names it); `and`, `or` and
`not` combine leaves. `completed` means succeeded or failed: a skipped dependency is not completed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ConditionType = Literal["always", "succeeded", "failed", "completed", "skipped", "and", "or", "not"]
CONDITION_TYPES = ("always", "succeeded", "failed", "completed", "skipped", "and", "or", "not")
LEAF_TYPES = ("always", "succeeded", "failed", "completed", "skipped")


def without_nulls(data: Any) -> Any:
    """A mapping without its null-valued keys: the raw walker of the workflow file reports each
    (WF-026), so the reader sees them as absent and still reports every other problem (WF-005)."""
    if isinstance(data, dict) and any(value is None for value in data.values()):
        return {key: value for key, value in data.items() if value is not None}
    return data


@dataclass(frozen=True, slots=True)
class Condition:
    """One node of the algebra; swamp/domain/definition.py reads it from the file and checks its
    shape (`and`/`or` take two or more `conditions`, `not` one `condition`, a leaf neither)."""

    type: ConditionType
    conditions: tuple[Condition, ...] | None = None
    condition: Condition | None = None

    def shape_problem(self) -> str | None:
        """What is wrong with this node's shape, if anything (its children are checked apart)."""
        if self.type in ("and", "or"):
            if self.conditions is None or len(self.conditions) < 2:
                return f"a condition of type '{self.type}' needs 'conditions' with at least two entries"
            if self.condition is not None:
                return f"a condition of type '{self.type}' takes 'conditions', not 'condition'"
        elif self.type == "not":
            if self.condition is None:
                return "a condition of type 'not' needs 'condition'"
            if self.conditions is not None:
                return "a condition of type 'not' takes 'condition', not 'conditions'"
        elif self.conditions is not None or self.condition is not None:
            return f"a condition of type '{self.type}' takes no nested conditions"
        return None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.conditions is not None:
            out["conditions"] = [c.to_json() for c in self.conditions]
        if self.condition is not None:
            out["condition"] = self.condition.to_json()
        return out


def condition_holds(condition: Condition, status: str | None) -> bool:
    """Whether `condition` holds for a dependency whose status is `status` (None: unknown)."""
    kind = condition.type
    if kind == "always":
        return True
    if kind == "succeeded":
        return status == "succeeded"
    if kind == "failed":
        return status == "failed"
    if kind == "completed":
        return status in ("succeeded", "failed")
    if kind == "skipped":
        return status == "skipped"
    if kind == "and":
        return all(condition_holds(c, status) for c in condition.conditions or ())
    if kind == "or":
        return any(condition_holds(c, status) for c in condition.conditions or ())
    assert condition.condition is not None
    return not condition_holds(condition.condition, status)
