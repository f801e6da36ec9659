"""The workflow file model: Workflow, Job, Step, the task variants and dependsOn entries.

Parsing goes in two passes. `unknown_key_problems` walks the raw mapping first so that a typo gets
the message people need ("Unknown key 'gaurd' on step 'x'. Did you mean 'guard'?"); then pydantic
checks types and shapes. Both report every problem with its path, never a traceback.

The file's JSON Schema (spec/schemas/workflow.schema.json) says the same shapes for other programs;
tests/test_workflow_schema.py holds the two to one verdict. So values are never coerced (`"yes"` is
not a boolean, `2.5` not an integer: every scalar field is strict, WF-025) and a key given `null`
is a problem the walker reports, not an absent key (WF-026).
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StrictFloat,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from .conditions import Condition, without_nulls
from .errors import WorkflowInvalid
from .expressions import whole_expression

WORKFLOW_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


SCHEMA_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "$defs",
        "$ref",
        "$schema",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "patternProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedProperties",
        "enum",
        "const",
        "title",
        "description",
        "default",
        "examples",
    }
)


def _json_integer(value: Any) -> Any:
    """2.0 is the integer 2, as JSON Schema counts integers; a boolean or a string is no integer."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


JsonInt = Annotated[int, BeforeValidator(_json_integer), Strict()]


def seconds_number(value: Any) -> Any:
    """A timeout is a JSON number: `"60"`, `1h` and `true` are not (WF-025)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        import json

        raise ValueError(f"must be a number of seconds, not {json.dumps(value, default=str)[:60]}")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        return without_nulls(data)


class ModelMethodTask(_Strict):
    type: Literal["model_method"]
    modelIdOrName: str = Field(min_length=1, strict=True)
    methodName: str = Field(min_length=1, strict=True)
    inputs: dict[str, Any] | str = Field(default_factory=dict)

    @field_validator("inputs", mode="before")
    @classmethod
    def _inputs_shape(cls, value: Any) -> Any:
        if not isinstance(value, (dict, str)):
            import json

            shown = json.dumps(value, default=str)[:60]
            raise ValueError(f"inputs must be a mapping or one whole ${{{{ }}}} expression, not {shown}")
        return value

    @field_validator("inputs")
    @classmethod
    def _inputs_expression(cls, value: dict[str, Any] | str) -> dict[str, Any] | str:
        if isinstance(value, str) and whole_expression(value) is None:
            raise ValueError("inputs must be a mapping or one whole ${{ }} expression that yields a mapping")
        return value


class ManualApprovalTask(_Strict):
    type: Literal["manual_approval"]
    prompt: str = Field(min_length=1, strict=True)
    timeout: StrictInt | StrictFloat | None = Field(default=None, gt=0, le=10 * 365 * 86400)

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout_is_number(cls, value: Any) -> Any:
        return seconds_number(value)


MAX_WAIT_SECONDS = 10 * 365 * 86400


class WaitForSignalTask(_Strict):
    type: Literal["wait_for_signal"]
    timeout: StrictInt | StrictFloat = Field(gt=0, le=MAX_WAIT_SECONDS)
    schema_: dict[str, Any] | bool = Field(default_factory=dict, alias="schema")
    description: str | None = Field(default=None, strict=True)

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout_is_number(cls, value: Any) -> Any:
        return seconds_number(value)

    @field_validator("schema_", mode="before")
    @classmethod
    def _schema_is_object_or_boolean(cls, value: Any) -> Any:
        if not isinstance(value, (dict, bool)):
            import json

            shown = json.dumps(value, default=str)[:60]
            raise ValueError(f"the schema must be a JSON Schema: an object or a boolean, not {shown}")
        return value


Task = Annotated[ModelMethodTask | ManualApprovalTask | WaitForSignalTask, Field(discriminator="type")]
TASK_TYPES: dict[str, type[BaseModel]] = {
    "model_method": ModelMethodTask,
    "manual_approval": ManualApprovalTask,
    "wait_for_signal": WaitForSignalTask,
}


class JobDependency(_Strict):
    job: str = Field(min_length=1, strict=True)
    condition: Condition


class StepDependency(_Strict):
    step: str = Field(min_length=1, strict=True)
    condition: Condition


class ForEach(_Strict):
    item: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", strict=True)
    in_: str = Field(alias="in", min_length=1, strict=True)

    @field_validator("in_")
    @classmethod
    def _in_is_expression(cls, value: str) -> str:
        if whole_expression(value) is None:
            raise ValueError("forEach.in must be one whole ${{ }} expression")
        return value


class Step(_Strict):
    name: str = Field(min_length=1, strict=True)
    description: str | None = Field(default=None, strict=True)
    task: Task
    dependsOn: tuple[StepDependency, ...] = ()
    guard: str | None = Field(default=None, strict=True)
    allowFailure: bool = Field(default=False, strict=True)
    forEach: ForEach | None = None
    weight: float = Field(default=0, strict=True)
    concurrency: JsonInt | None = Field(default=None, ge=0)

    @field_validator("guard")
    @classmethod
    def _guard_is_expression(cls, value: str | None) -> str | None:
        if value is not None and whole_expression(value) is None:
            raise ValueError(f"guard must be one whole ${{{{ }}}} expression, got: {value}")
        return value


class Job(_Strict):
    name: str = Field(min_length=1, strict=True)
    description: str | None = Field(default=None, strict=True)
    steps: tuple[Step, ...] = Field(min_length=1)
    dependsOn: tuple[JobDependency, ...] = ()
    weight: float = Field(default=0, strict=True)
    concurrency: JsonInt | None = Field(default=None, ge=0)


class Workflow(_Strict):
    id: str = Field(
        pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", strict=True
    )
    name: str = Field(min_length=1, strict=True)
    description: str | None = Field(default=None, strict=True)
    version: JsonInt = Field(default=1, gt=0)
    tags: dict[str, str] = Field(default_factory=dict, strict=True)
    inputs: dict[str, Any] | None = None
    jobs: tuple[Job, ...] = Field(min_length=1)
    concurrency: JsonInt | None = Field(default=None, ge=0)

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if ".." in value or "/" in value or "\\" in value or "\x00" in value:
            raise ValueError("name must not contain '..', '/', '\\' or NUL")
        return value

    @field_validator("inputs", mode="before")
    @classmethod
    def _flat_inputs(cls, value: Any) -> Any:
        """`inputs:` may also list the properties directly (the original swamp's flat form)."""
        flat = isinstance(value, dict) and value and not (set(value) & SCHEMA_KEYWORDS)
        if flat and all(isinstance(v, dict) for v in value.values()):
            return {"type": "object", "properties": value}
        return value

    @field_validator("inputs")
    @classmethod
    def _inputs_is_object_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and value.get("type", "object") != "object":
            raise ValueError("inputs must be a JSON Schema of type 'object'")
        return value

    def job(self, name: str) -> Job:
        for job in self.jobs:
            if job.name == name:
                return job
        raise KeyError(name)

    def allowed_failures(self) -> dict[tuple[str, str], bool]:
        """`allowFailure` of every step, by (job, step): two jobs may each have a step `review`."""
        return {(job.name, step.name): step.allowFailure for job in self.jobs for step in job.steps}


# ---------------------------------------------------------------------------------------------
# Unknown keys, with "did you mean"


def _keys_of(model: type[BaseModel]) -> list[str]:
    return [f.alias or n for n, f in model.model_fields.items()]


WORKFLOW_KEYS = _keys_of(Workflow)
JOB_KEYS = _keys_of(Job)
STEP_KEYS = _keys_of(Step)
FOREACH_KEYS = ["item", "in"]
CONDITION_KEYS = ["type", "conditions", "condition"]


def _unknown(entity: str, name: str, keys: dict[str, Any], valid: list[str], path: str) -> list[str]:
    problems = []
    for key, value in keys.items():
        if key in valid:
            if value is None:
                where = key if path == "workflow" else f"{path}.{key}"
                problems.append(f"{where}: must not be null; give a value or leave the key out")
            continue
        close = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.6)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        problems.append(
            f"{path}: Unknown key '{key}' on {entity} '{name}'.{hint} Valid {entity} keys: {', '.join(valid)}"
        )
    return problems


def _condition_problems(cond: Any, path: str) -> list[str]:
    if not isinstance(cond, dict):
        return []
    problems = _unknown("condition", str(cond.get("type", "?")), cond, CONDITION_KEYS, path)
    for i, sub in enumerate(cond.get("conditions") or []):
        problems += _condition_problems(sub, f"{path}.conditions[{i}]")
    if "condition" in cond:
        problems += _condition_problems(cond["condition"], f"{path}.condition")
    return problems


def _depends_problems(entries: Any, ref: str, path: str, owner: str) -> list[str]:
    problems: list[str] = []
    if not isinstance(entries, list):
        return problems
    for i, dep in enumerate(entries):
        where = f"{path}.dependsOn[{i}]"
        if isinstance(dep, str):
            problems.append(
                f"{where}: dependsOn entries are objects with a condition, e.g. "
                f"'- {{{ref}: {dep}, condition: {{type: succeeded}}}}' (on {owner})"
            )
            continue
        if isinstance(dep, dict):
            problems += _unknown("dependency", str(dep.get(ref, "?")), dep, [ref, "condition"], where)
            problems += _condition_problems(dep.get("condition"), f"{where}.condition")
    return problems


def unknown_key_problems(raw: dict[str, Any]) -> list[str]:
    problems = _unknown("workflow", str(raw.get("name", "?")), raw, WORKFLOW_KEYS, "workflow")
    jobs = raw.get("jobs")
    if not isinstance(jobs, list):
        return problems
    for j, job in enumerate(jobs):
        if not isinstance(job, dict):
            continue
        jpath = f"jobs[{j}]"
        jname = str(job.get("name", "?"))
        problems += _unknown("job", jname, job, JOB_KEYS, jpath)
        problems += _depends_problems(job.get("dependsOn"), "job", jpath, f"job '{jname}'")
        steps = job.get("steps")
        if not isinstance(steps, list):
            continue
        for s, step in enumerate(steps):
            if not isinstance(step, dict):
                continue
            spath = f"{jpath}.steps[{s}]"
            sname = str(step.get("name", "?"))
            problems += _unknown("step", sname, step, STEP_KEYS, spath)
            problems += _depends_problems(step.get("dependsOn"), "step", spath, f"step '{sname}'")
            if isinstance(step.get("forEach"), dict):
                problems += _unknown("forEach", sname, step["forEach"], FOREACH_KEYS, f"{spath}.forEach")
            task = step.get("task")
            if isinstance(task, dict):
                problems += _task_problems(task, sname, f"{spath}.task")
    return problems


def _task_problems(task: dict[str, Any], step_name: str, path: str) -> list[str]:
    kind = task.get("type")
    if kind not in TASK_TYPES:
        valid = ", ".join(TASK_TYPES)
        if kind is None:
            return [f"{path}: the task of step '{step_name}' has no 'type'. Valid task types: {valid}"]
        return [f"{path}: Unknown task type '{kind}' on step '{step_name}'. Valid task types: {valid}"]
    if kind == "model_method" and "arguments" in task and "inputs" not in task:
        return [f"{path}: Unknown key 'arguments' on task of step '{step_name}'. Did you mean 'inputs'?"]
    return _unknown("task", step_name, task, _keys_of(TASK_TYPES[kind]), path)


def _format_loc(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item in TASK_TYPES or item.startswith("function-") or item in ("str", "dict[str,any]"):
            continue
        else:
            parts.append(("." if parts else "") + item)
    return "".join(parts) or "workflow"


def validation_problems(error: ValidationError, skip: tuple[str, ...] = ()) -> list[str]:
    all_errors = error.errors()
    errors = [e for e in all_errors if e["type"] not in skip]
    locs = [tuple(e["loc"]) for e in all_errors]

    def echo_of_item_error(e: Any) -> bool:
        # A list with a broken item is also reported as "too short" (only valid items count).
        loc = tuple(e["loc"])
        return e["type"] == "too_short" and any(o[: len(loc)] == loc and len(o) > len(loc) for o in locs)

    problems = []
    for e in errors:
        if echo_of_item_error(e):
            continue
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        problems.append(f"{_format_loc(tuple(e['loc']))}: {msg}")
    return problems


def parse_workflow(raw: Any, source: str = "workflow") -> Workflow:
    """Build a Workflow from a parsed YAML document; WorkflowInvalid lists every problem."""
    if not isinstance(raw, dict):
        raise WorkflowInvalid(
            f"{source} is not a workflow: expected a mapping at the top level",
            {"path": source, "problems": ["the document must be a mapping"]},
        )
    problems = unknown_key_problems(raw)
    try:
        workflow = Workflow.model_validate(raw)
    except ValidationError as exc:
        # Keep pydantic's findings elsewhere in the file; where a key problem was already said
        # (better) above, pydantic's own words for the same place, or its parents, are dropped.
        said = [p.split(": ", 1)[0] for p in problems]
        covered = ("extra_forbidden", "union_tag_invalid", "union_tag_not_found") if problems else ()
        for problem in validation_problems(exc, skip=covered):
            where = problem.split(": ", 1)[0]
            if not any(where.startswith(w) or w.startswith(where) for w in said):
                problems.append(problem)
    else:
        if not problems:
            return workflow
    raise WorkflowInvalid(
        f"{source} is invalid: {problems[0]}"
        + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
        {"path": source, "problems": problems},
    )
