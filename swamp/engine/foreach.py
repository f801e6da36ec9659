"""forEach expansion: one StepRun per item, named from the template."""

from __future__ import annotations

from typing import Any

from ..domain.definition import Step
from ..domain.errors import ExpressionError
from ..domain.expressions import EXPRESSION, ExpressionEngine, Scope, ensure_json, js_string, whole_expression
from ..domain.run import StepRun
from ..domain.waits import new_wait_id


def items_of(step: Step, engine: ExpressionEngine, scope: Scope) -> list[tuple[str, Any]]:
    """(suffix, self-value) pairs. Raises ExpressionError for a bad `in` or a non-collection."""
    assert step.forEach is not None
    source = whole_expression(step.forEach.in_)
    assert source is not None
    collection = ensure_json(engine.evaluate(source, scope))  # each item is stored on its step
    if isinstance(collection, list):
        return [(str(i), v) for i, v in enumerate(collection)]
    if isinstance(collection, dict):
        return [(str(k), {"key": k, "value": v}) for k, v in collection.items()]
    raise ExpressionError(
        f"forEach.in must evaluate to a list or a map, got {type(collection).__name__}",
        {"expression": source},
    )


def expand(step: Step, engine: ExpressionEngine, scope: Scope) -> list[StepRun]:
    assert step.forEach is not None
    item_name = step.forEach.item
    runs: list[StepRun] = []
    used: set[str] = set()
    for index, (key, value) in enumerate(items_of(step, engine, scope)):
        binding = {item_name: value}
        name = _expanded_name(
            step.name,
            key,
            value,
            isinstance(value, dict) and "key" in value,
            engine,
            scope.with_self(binding),
        )
        if name in used:
            name = f"{name}-{index}"
        used.add(name)
        expansion = StepRun(name=name, forEachTemplate=step.name, forEachItem=binding)
        if step.task.type == "wait_for_signal":  # each expansion reserves its own wait ID (WAIT-067)
            expansion.reservedWaitId = new_wait_id()
        runs.append(expansion)
    return runs


def _expanded_name(
    template: str, key: str, value: Any, from_map: bool, engine: ExpressionEngine, scope: Scope
) -> str:
    if "${{" in template:
        try:
            return str(EXPRESSION.sub(lambda m: js_string(engine.evaluate(m.group(1), scope)), template))
        except ExpressionError:
            return f"{template}-{key}"
    if from_map:
        return f"{template}-{key}"
    if isinstance(value, (dict, list)):
        return f"{template}-{key}"
    return f"{template}-{js_string(value)}"
