"""The workflow file model: Workflow, Job, Step, the task variants and dependsOn entries.

Reading goes in two passes. `unknown_key_problems` walks the raw mapping first so that a typo gets
the message people need ("Unknown key 'gaurd' on step 'x'. Did you mean 'guard'?"); then `_Reader`
checks types and shapes, field by field, and builds the frozen dataclasses below. Both report
every problem with its path, never a traceback.

The second pass says what the pydantic models swamp used before said, word for word and in the
same order ("Field required", "Input should be a valid string", "Tuple should have at least 1 item
after validation, not 0", ...): tests/test_workflow_models.py holds it to their answers on a corpus
of good and broken files (tests/corpus/workflow-models.json). A path item that is the name of a
task type, `str`, `bool` or `dict[str,any]` stands for the branch of a choice, as pydantic named
them; `_format_loc` leaves the first three out of the shown path, as it always did.

The file's JSON Schema (spec/schemas/workflow.schema.json) says the same shapes for other programs;
tests/test_workflow_schema.py holds the two to one verdict. So values are never coerced (`"yes"` is
not a boolean, `2.5` not an integer: every scalar field is strict, WF-025) and a key given `null`
is a problem the walker reports, not an absent key (WF-026).

`to_json()` is the definition a run record stores and drift detection compares: every field in
declaration order, defaults included (`dependsOn: []`, `weight: 0.0`, `version: 1`, `tags: {}`),
absent optional fields left out, `schema` and `in` under their file keys.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from .access import APPROVER_KEYS, POLICY_KEYS, Policy
from .conditions import CONDITION_TYPES, Condition, without_nulls
from .durations import EXAMPLES as DURATION_EXAMPLES
from .durations import is_number_text, parse_duration
from .errors import WorkflowInvalid
from .expressions import whole_expression

WORKFLOW_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
MAX_WAIT_SECONDS = 10 * 365 * 86400


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


def seconds_number(value: Any) -> Any:
    """A timeout in seconds: a JSON number, or a string that is a duration with a unit (`10m`,
    `PT10M`: WF-038), read as its number of seconds. `"60"` and `true` are neither (WF-025)."""
    if isinstance(value, str) and not is_number_text(value):
        with contextlib.suppress(ValueError):
            return parse_duration(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(
            f"must be a number of seconds or a duration such as {DURATION_EXAMPLES}, "
            f"not {json.dumps(value, default=str)[:60]}"
        )
    return value


def _json_value(value: Any) -> Any:
    """A free-form value (inputs, a schema) as JSON data: tuples as lists, keys as strings, and a
    float that JSON cannot hold (NaN, infinity) as null, as pydantic's JSON mode wrote them."""
    if isinstance(value, dict):
        return {_json_key(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, float) and not math.isfinite(key):
        return "None"
    return str(key)


# ---------------------------------------------------------------------------------------------
# The model


@dataclass(frozen=True, slots=True)
class ModelMethodTask:
    type: Literal["model_method"]
    modelIdOrName: str
    methodName: str
    inputs: dict[str, Any] | str = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "modelIdOrName": self.modelIdOrName,
            "methodName": self.methodName,
            "inputs": _json_value(self.inputs),
        }


@dataclass(frozen=True, slots=True)
class ManualApprovalTask:
    type: Literal["manual_approval"]
    prompt: str
    timeout: int | float | None = None
    approvers: Policy | None = None  # who may decide, captured when the gate opens (ACCESS-001)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "prompt": self.prompt}
        if self.timeout is not None:
            out["timeout"] = self.timeout
        if self.approvers is not None:
            out["approvers"] = _policy_json(self.approvers, approvers=True)
        return out


@dataclass(frozen=True, slots=True)
class WaitForSignalTask:
    type: Literal["wait_for_signal"]
    timeout: int | float
    schema_: dict[str, Any] | bool = field(default_factory=dict)  # the file's `schema`
    description: str | None = None
    answerers: Policy | None = None  # who may answer, captured when the wait opens (ACCESS-001)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "timeout": self.timeout,
            "schema": _json_value(self.schema_),
        }
        if self.description is not None:
            out["description"] = self.description
        if self.answerers is not None:
            out["answerers"] = _policy_json(self.answerers, approvers=False)
        return out


def _policy_json(policy: Policy, *, approvers: bool) -> dict[str, Any]:
    """A policy as the file says it: the keys given (a run's definition is read back as a file)."""
    out: dict[str, Any] = {}
    if policy.accounts:
        out["accounts"] = list(policy.accounts)
    if policy.groups:
        out["groups"] = list(policy.groups)
    if not policy.starter:
        out["starter"] = False
    if approvers and policy.required != 1:
        out["required"] = policy.required
    return out


Task = ModelMethodTask | ManualApprovalTask | WaitForSignalTask
TASK_TYPES: dict[str, type[Task]] = {
    "model_method": ModelMethodTask,
    "manual_approval": ManualApprovalTask,
    "wait_for_signal": WaitForSignalTask,
}
TASK_KEYS = {
    "model_method": ["type", "modelIdOrName", "methodName", "inputs"],
    "manual_approval": ["type", "prompt", "timeout", "approvers"],
    "wait_for_signal": ["type", "timeout", "schema", "description", "answerers"],
}


@dataclass(frozen=True, slots=True)
class JobDependency:
    job: str
    condition: Condition

    def to_json(self) -> dict[str, Any]:
        return {"job": self.job, "condition": self.condition.to_json()}


@dataclass(frozen=True, slots=True)
class StepDependency:
    step: str
    condition: Condition

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "condition": self.condition.to_json()}


@dataclass(frozen=True, slots=True)
class ForEach:
    item: str
    in_: str  # the file's `in`

    def to_json(self) -> dict[str, Any]:
        return {"item": self.item, "in": self.in_}


@dataclass(frozen=True, slots=True)
class Step:
    name: str
    task: Task
    description: str | None = None
    dependsOn: tuple[StepDependency, ...] = ()
    guard: str | None = None
    allowFailure: bool = False
    forEach: ForEach | None = None
    weight: float = 0.0
    concurrency: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        out["task"] = self.task.to_json()
        out["dependsOn"] = [d.to_json() for d in self.dependsOn]
        if self.guard is not None:
            out["guard"] = self.guard
        out["allowFailure"] = self.allowFailure
        if self.forEach is not None:
            out["forEach"] = self.forEach.to_json()
        out["weight"] = self.weight
        if self.concurrency is not None:
            out["concurrency"] = self.concurrency
        return out


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    steps: tuple[Step, ...]
    description: str | None = None
    dependsOn: tuple[JobDependency, ...] = ()
    weight: float = 0.0
    concurrency: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        out["steps"] = [s.to_json() for s in self.steps]
        out["dependsOn"] = [d.to_json() for d in self.dependsOn]
        out["weight"] = self.weight
        if self.concurrency is not None:
            out["concurrency"] = self.concurrency
        return out


@dataclass(frozen=True, slots=True)
class Workflow:
    id: str
    name: str
    jobs: tuple[Job, ...]
    description: str | None = None
    version: int = 1
    tags: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, Any] | None = None
    concurrency: int | None = None

    @classmethod
    def from_json(cls, data: Any, source: str = "the run's definition") -> Workflow:
        """A workflow from its `to_json()` form (a run record's `definition`): the file's rules
        apply, without the walker's advice on keys. WorkflowInvalid if it breaks them."""
        reader = _Reader()
        workflow = reader.workflow(data) if isinstance(data, dict) else None
        if not isinstance(workflow, Workflow):
            problems = validation_problems(reader.errors) or ["the definition must be a mapping"]
            raise WorkflowInvalid(
                f"{source} is invalid: {problems[0]}", {"path": source, "problems": problems}
            )
        return workflow

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name}
        if self.description is not None:
            out["description"] = self.description
        out["version"] = self.version
        out["tags"] = dict(self.tags)
        if self.inputs is not None:
            out["inputs"] = _json_value(self.inputs)
        out["jobs"] = [j.to_json() for j in self.jobs]
        if self.concurrency is not None:
            out["concurrency"] = self.concurrency
        return out

    def job(self, name: str) -> Job:
        for job in self.jobs:
            if job.name == name:
                return job
        raise KeyError(name)

    def allowed_failures(self) -> dict[tuple[str, str], bool]:
        """`allowFailure` of every step, by (job, step): two jobs may each have a step `review`."""
        return {(job.name, step.name): step.allowFailure for job in self.jobs for step in job.steps}


# ---------------------------------------------------------------------------------------------
# Types and shapes: the second pass

Loc = tuple[Any, ...]
T = TypeVar("T")


class _Missing:
    pass


FAIL: Any = _Missing()  # a value that did not pass (its error is recorded)
REQUIRED: Any = _Missing()

UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
ITEM_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
_UUID = re.compile(UUID_PATTERN[1:-1])
_ITEM = re.compile(ITEM_PATTERN[1:-1])
TUPLE_TOO_SHORT = "Tuple should have at least 1 item after validation, not 0"


class _Reader:
    """Checks one parsed document field by field; `errors` collects (path, type, message) in
    the order pydantic reported them: a model's fields in declaration order (a missing one
    where it would be), then its unknown keys; a model's own shape rule only when its fields
    passed."""

    def __init__(self) -> None:
        self.errors: list[tuple[Loc, str, str]] = []

    def fail(self, loc: Loc, kind: str, message: str) -> Any:
        self.errors.append((loc, kind, message))
        return FAIL

    # -- scalars ---------------------------------------------------------------------------

    def string(
        self, value: Any, loc: Loc, min_length: int = 0, pattern: tuple[str, re.Pattern[str]] | None = None
    ) -> Any:
        if not isinstance(value, str):
            return self.fail(loc, "string_type", "Input should be a valid string")
        if len(value) < min_length:
            return self.fail(loc, "string_too_short", "String should have at least 1 character")
        if pattern is not None and pattern[1].fullmatch(value) is None:
            return self.fail(loc, "string_pattern_mismatch", f"String should match pattern '{pattern[0]}'")
        return value

    def boolean(self, value: Any, loc: Loc) -> Any:
        if not isinstance(value, bool):
            return self.fail(loc, "bool_type", "Input should be a valid boolean")
        return value

    def number(self, value: Any, loc: Loc) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return self.fail(loc, "float_type", "Input should be a valid number")
        try:
            return float(value)
        except OverflowError:
            return self.fail(loc, "finite_number", "Input should be a finite number")

    def integer(self, value: Any, loc: Loc, *, ge: int | None = None, gt: int | None = None) -> Any:
        """A JSON integer: 2.0 is the integer 2, as JSON Schema counts; a boolean is none."""
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            return self.fail(loc, "int_type", "Input should be a valid integer")
        if gt is not None and not value > gt:
            return self.fail(loc, "greater_than", f"Input should be greater than {gt}")
        if ge is not None and not value >= ge:
            return self.fail(loc, "greater_than_equal", f"Input should be greater than or equal to {ge}")
        return value

    def seconds(self, value: Any, loc: Loc) -> Any:
        try:
            value = seconds_number(value)
        except ValueError as exc:
            return self.fail(loc, "value_error", str(exc))
        if not value > 0:
            return self.fail(loc, "greater_than", "Input should be greater than 0")
        if not value <= MAX_WAIT_SECONDS:
            return self.fail(
                loc, "less_than_equal", f"Input should be less than or equal to {MAX_WAIT_SECONDS}"
            )
        return value

    def mapping(self, value: Any, loc: Loc) -> Any:
        """dict[str, Any]: a mapping whose keys are strings."""
        if not isinstance(value, dict):
            return self.fail(loc, "dict_type", "Input should be a valid dictionary")
        bad = [key for key in value if not isinstance(key, str)]
        for key in bad:
            self.fail((*loc, key, "[key]"), "string_type", "Input should be a valid string")
        return FAIL if bad else value

    def mapping_or(self, value: Any, loc: Loc, other: str) -> Any:
        """dict[str, Any] | str (or | bool), the value already one of the two kinds."""
        if isinstance(value, dict) and self.mapping(value, (*loc, "dict[str,any]")) is FAIL:
            word = "string" if other == "str" else "boolean"  # the other branch fails too
            return self.fail((*loc, other), f"{other}_type", f"Input should be a valid {word}")
        return value

    def sequence(self, value: Any, loc: Loc, item: Callable[[Any, Loc], T], min_length: int = 0) -> Any:
        if not isinstance(value, (list, tuple)):
            return self.fail(loc, "tuple_type", "Input should be a valid tuple")
        items = [item(v, (*loc, i)) for i, v in enumerate(value)]
        valid = tuple(v for v in items if v is not FAIL)
        if len(valid) < min_length:
            self.fail(loc, "too_short", TUPLE_TOO_SHORT)
        return valid if len(valid) == len(items) and len(valid) >= min_length else FAIL

    # -- models ----------------------------------------------------------------------------

    def fields(
        self, value: Any, loc: Loc, title: str, spec: list[tuple[str, Callable[[Any, Loc], Any], Any]]
    ) -> Any:
        """The fields of one model, as a dict of values (FAIL if any failed), the unknown keys
        after them. `spec`: (key, check, default or REQUIRED), in declaration order."""
        if not isinstance(value, dict):
            return self.fail(loc, "model_type", f"Input should be a valid dictionary or instance of {title}")
        data = without_nulls(value)
        out: dict[str, Any] = {}
        failed = False
        used = set()
        for key, check, default in spec:
            name = key
            if key not in data and key in _BY_NAME and _BY_NAME[key] in data:
                name = _BY_NAME[key]  # pydantic took the field's Python name too
            if name in data:
                used.add(name)
                result = check(data[name], (*loc, name))
            elif default is REQUIRED:
                result = self.fail((*loc, key), "missing", "Field required")
            else:
                result = default() if callable(default) else default
            failed = failed or result is FAIL
            out[key] = result
        for key in data:
            if not isinstance(key, str):
                failed = True
                self.fail((*loc, key), "invalid_key", "Keys should be strings")
            elif key not in used:
                failed = True
                self.fail((*loc, key), "extra_forbidden", "Extra inputs are not permitted")
        return FAIL if failed else out

    def workflow(self, value: Any) -> Any:
        out = self.fields(
            value,
            (),
            "Workflow",
            [
                ("id", lambda v, loc: self.string(v, loc, pattern=(UUID_PATTERN, _UUID)), REQUIRED),
                ("name", self.workflow_name, REQUIRED),
                ("description", self.string, None),
                ("version", lambda v, loc: self.integer(v, loc, gt=0), 1),
                ("tags", self.tags, dict),
                ("inputs", self.workflow_inputs, None),
                ("jobs", lambda v, loc: self.sequence(v, loc, self.job, 1), REQUIRED),
                ("concurrency", lambda v, loc: self.integer(v, loc, ge=0), None),
            ],
        )
        return FAIL if out is FAIL else Workflow(**out)

    def workflow_name(self, value: Any, loc: Loc) -> Any:
        name = self.string(value, loc, 1)
        if name is not FAIL and (".." in name or "/" in name or "\\" in name or "\x00" in name):
            return self.fail(loc, "value_error", "name must not contain '..', '/', '\\' or NUL")
        return name

    def tags(self, value: Any, loc: Loc) -> Any:
        if not isinstance(value, dict):
            return self.fail(loc, "dict_type", "Input should be a valid dictionary")
        before = len(self.errors)
        for key, item in value.items():
            if not isinstance(key, str):
                self.fail((*loc, key, "[key]"), "string_type", "Input should be a valid string")
            if not isinstance(item, str):
                self.fail((*loc, key), "string_type", "Input should be a valid string")
        return dict(value) if len(self.errors) == before else FAIL

    def workflow_inputs(self, value: Any, loc: Loc) -> Any:
        """`inputs:` may also list the properties directly (the original swamp's flat form)."""
        flat = isinstance(value, dict) and value and not (set(value) & SCHEMA_KEYWORDS)
        if flat and all(isinstance(v, dict) for v in value.values()):
            value = {"type": "object", "properties": value}
        if self.mapping(value, loc) is FAIL:
            return FAIL
        if value.get("type", "object") != "object":
            return self.fail(loc, "value_error", "inputs must be a JSON Schema of type 'object'")
        return value

    def job(self, value: Any, loc: Loc) -> Any:
        out = self.fields(
            value,
            loc,
            "Job",
            [
                ("name", lambda v, at: self.string(v, at, 1), REQUIRED),
                ("description", self.string, None),
                ("steps", lambda v, at: self.sequence(v, at, self.step, 1), REQUIRED),
                ("dependsOn", lambda v, at: self.sequence(v, at, self.job_dependency), ()),
                ("weight", self.number, 0.0),
                ("concurrency", lambda v, at: self.integer(v, at, ge=0), None),
            ],
        )
        return FAIL if out is FAIL else Job(**out)

    def step(self, value: Any, loc: Loc) -> Any:
        out = self.fields(
            value,
            loc,
            "Step",
            [
                ("name", lambda v, at: self.string(v, at, 1), REQUIRED),
                ("description", self.string, None),
                ("task", self.task, REQUIRED),
                ("dependsOn", lambda v, at: self.sequence(v, at, self.step_dependency), ()),
                ("guard", self.guard, None),
                ("allowFailure", self.boolean, False),
                ("forEach", self.for_each, None),
                ("weight", self.number, 0.0),
                ("concurrency", lambda v, at: self.integer(v, at, ge=0), None),
            ],
        )
        return FAIL if out is FAIL else Step(**out)

    def guard(self, value: Any, loc: Loc) -> Any:
        if self.string(value, loc) is FAIL:
            return FAIL
        if whole_expression(value) is None:
            return self.fail(
                loc, "value_error", f"guard must be one whole ${{{{ }}}} expression, got: {value}"
            )
        return value

    def for_each(self, value: Any, loc: Loc) -> Any:
        out = self.fields(
            value,
            loc,
            "ForEach",
            [
                ("item", lambda v, at: self.string(v, at, 1, (ITEM_PATTERN, _ITEM)), REQUIRED),
                ("in", self.for_each_in, REQUIRED),
            ],
        )
        return FAIL if out is FAIL else ForEach(item=out["item"], in_=out["in"])

    def for_each_in(self, value: Any, loc: Loc) -> Any:
        if self.string(value, loc, 1) is FAIL:
            return FAIL
        if whole_expression(value) is None:
            return self.fail(loc, "value_error", "forEach.in must be one whole ${{ }} expression")
        return value

    def job_dependency(self, value: Any, loc: Loc) -> Any:
        out = self.fields(
            value,
            loc,
            "JobDependency",
            [("job", lambda v, at: self.string(v, at, 1), REQUIRED), ("condition", self.condition, REQUIRED)],
        )
        return FAIL if out is FAIL else JobDependency(**out)

    def step_dependency(self, value: Any, loc: Loc) -> Any:
        out = self.fields(
            value,
            loc,
            "StepDependency",
            [
                ("step", lambda v, at: self.string(v, at, 1), REQUIRED),
                ("condition", self.condition, REQUIRED),
            ],
        )
        return FAIL if out is FAIL else StepDependency(**out)

    def condition(self, value: Any, loc: Loc) -> Any:
        out = self.fields(
            value,
            loc,
            "Condition",
            [
                ("type", self.condition_type, REQUIRED),
                ("conditions", lambda v, at: self.sequence(v, at, self.condition), None),
                ("condition", self.condition, None),
            ],
        )
        if out is FAIL:
            return FAIL
        condition = Condition(**out)
        problem = condition.shape_problem()
        return condition if problem is None else self.fail(loc, "value_error", problem)

    def condition_type(self, value: Any, loc: Loc) -> Any:
        if isinstance(value, str) and value in CONDITION_TYPES:
            return value
        shown = ", ".join(f"'{t}'" for t in CONDITION_TYPES[:-1])
        return self.fail(loc, "literal_error", f"Input should be {shown} or '{CONDITION_TYPES[-1]}'")

    # -- tasks -----------------------------------------------------------------------------

    def task(self, value: Any, loc: Loc) -> Any:
        if not isinstance(value, dict):
            return self.fail(
                loc,
                "model_attributes_type",
                "Input should be a valid dictionary or object to extract fields from",
            )
        if "type" not in value:
            return self.fail(loc, "union_tag_not_found", "Unable to extract tag using discriminator 'type'")
        kind = value["type"]
        if not isinstance(kind, str) or kind not in TASK_TYPES:
            expected = ", ".join(f"'{t}'" for t in TASK_TYPES)
            return self.fail(
                loc,
                "union_tag_invalid",
                f"Input tag '{kind}' found using 'type' does not match any of the expected tags: {expected}",
            )
        at = (*loc, kind)
        kind_check = lambda v, where: v  # noqa: E731 - the tag chose the model
        if kind == "model_method":
            out = self.fields(
                value,
                at,
                "ModelMethodTask",
                [
                    ("type", kind_check, REQUIRED),
                    ("modelIdOrName", lambda v, where: self.string(v, where, 1), REQUIRED),
                    ("methodName", lambda v, where: self.string(v, where, 1), REQUIRED),
                    ("inputs", self.method_inputs, dict),
                ],
            )
            return FAIL if out is FAIL else ModelMethodTask(**out)
        if kind == "manual_approval":
            out = self.fields(
                value,
                at,
                "ManualApprovalTask",
                [
                    ("type", kind_check, REQUIRED),
                    ("prompt", lambda v, where: self.string(v, where, 1), REQUIRED),
                    ("timeout", self.seconds, None),
                    ("approvers", lambda v, where: self.policy(v, where, approvers=True), None),
                ],
            )
            return FAIL if out is FAIL else ManualApprovalTask(**out)
        out = self.fields(
            value,
            at,
            "WaitForSignalTask",
            [
                ("type", kind_check, REQUIRED),
                ("timeout", self.seconds, REQUIRED),
                ("schema", self.wait_schema, dict),
                ("description", self.string, None),
                ("answerers", lambda v, where: self.policy(v, where, approvers=False), None),
            ],
        )
        if out is FAIL:
            return FAIL
        out["schema_"] = out.pop("schema")
        return WaitForSignalTask(**out)

    def policy(self, value: Any, loc: Loc, *, approvers: bool) -> Any:
        """`answerers:` / `approvers:` (ACCESS-002..006): names are non-empty strings, a list
        given is not empty, `required` an integer >= 1, and the policy says something."""
        spec: list[tuple[str, Callable[[Any, Loc], Any], Any]] = [
            ("accounts", self.names, tuple),
            ("groups", self.names, tuple),
            ("starter", self.boolean, True),
        ]
        if approvers:
            spec.append(("required", lambda v, at: self.integer(v, at, ge=1), 1))
        out = self.fields(value, loc, "ApproverPolicy" if approvers else "AnswererPolicy", spec)
        if out is FAIL:
            return FAIL
        policy = Policy(**out)
        key = "approvers" if approvers else "answerers"
        if policy.is_empty:
            return self.fail(
                loc,
                "value_error",
                f"{key} admits everyone, as leaving it out does: name accounts or groups"
                + (", say starter: false or required: N" if approvers else " or say starter: false")
                + f", or remove {key}",
            )
        return policy

    def names(self, value: Any, loc: Loc) -> Any:
        """A policy's accounts or groups: a non-empty list of non-empty strings."""
        if isinstance(value, (list, tuple)) and not value:
            return self.fail(
                loc, "too_short", "an empty list names nobody: name at least one, or leave the key out"
            )
        for i, name in enumerate(value if isinstance(value, (list, tuple)) else ()):
            if not isinstance(name, str) or not name:
                shown = json.dumps(name, default=str)[:40]
                return self.fail(
                    (*loc, i), "string_type", f"names are non-empty strings, not {shown} (quote it: '{name}')"
                )
        return self.sequence(value, loc, self.string, 1)

    def method_inputs(self, value: Any, loc: Loc) -> Any:
        if not isinstance(value, (dict, str)):
            shown = json.dumps(value, default=str)[:60]
            return self.fail(
                loc,
                "value_error",
                f"inputs must be a mapping or one whole ${{{{ }}}} expression, not {shown}",
            )
        if self.mapping_or(value, loc, "str") is FAIL:
            return FAIL
        if isinstance(value, str) and whole_expression(value) is None:
            return self.fail(
                loc,
                "value_error",
                "inputs must be a mapping or one whole ${{ }} expression that yields a mapping",
            )
        return value

    def wait_schema(self, value: Any, loc: Loc) -> Any:
        if not isinstance(value, (dict, bool)):
            shown = json.dumps(value, default=str)[:60]
            return self.fail(
                loc, "value_error", f"the schema must be a JSON Schema: an object or a boolean, not {shown}"
            )
        return self.mapping_or(value, loc, "bool")


_BY_NAME = {"schema": "schema_", "in": "in_"}


# ---------------------------------------------------------------------------------------------
# Unknown keys, with "did you mean": the first pass


WORKFLOW_KEYS = ["id", "name", "description", "version", "tags", "inputs", "jobs", "concurrency"]
JOB_KEYS = ["name", "description", "steps", "dependsOn", "weight", "concurrency"]
STEP_KEYS = [
    "name",
    "description",
    "task",
    "dependsOn",
    "guard",
    "allowFailure",
    "forEach",
    "weight",
    "concurrency",
]
FOREACH_KEYS = ["item", "in"]
CONDITION_KEYS = ["type", "conditions", "condition"]


def _unknown(entity: str, name: str, keys: dict[Any, Any], valid: list[str], path: str) -> list[str]:
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
    subs = cond.get("conditions")
    for i, sub in enumerate(subs if isinstance(subs, (list, str, dict)) else ()):
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


def unknown_key_problems(raw: dict[Any, Any]) -> list[str]:
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


def _task_problems(task: dict[Any, Any], step_name: str, path: str) -> list[str]:
    kind = task.get("type")
    if not isinstance(kind, str) or kind not in TASK_TYPES:
        valid = ", ".join(TASK_TYPES)
        if kind is None:
            return [f"{path}: the task of step '{step_name}' has no 'type'. Valid task types: {valid}"]
        return [f"{path}: Unknown task type '{kind}' on step '{step_name}'. Valid task types: {valid}"]
    if kind == "model_method" and "arguments" in task and "inputs" not in task:
        return [f"{path}: Unknown key 'arguments' on task of step '{step_name}'. Did you mean 'inputs'?"]
    problems = _unknown("task", step_name, task, TASK_KEYS[kind], path)
    key = {"wait_for_signal": "answerers", "manual_approval": "approvers"}.get(kind)
    if key is not None and isinstance(task.get(key), dict):
        keys = list(APPROVER_KEYS if key == "approvers" else POLICY_KEYS)
        problems += _unknown(key, step_name, task[key], keys, f"{path}.{key}")
    return problems


# ---------------------------------------------------------------------------------------------
# Both passes together


def _format_loc(loc: Loc) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif not isinstance(item, str):
            parts.append(("." if parts else "") + str(item))
        elif item in TASK_TYPES or item.startswith("function-") or item in ("str", "dict[str,any]"):
            continue
        else:
            parts.append(("." if parts else "") + item)
    return "".join(parts) or "workflow"


def validation_problems(errors: list[tuple[Loc, str, str]], skip: tuple[str, ...] = ()) -> list[str]:
    locs = [loc for loc, _, _ in errors]

    def echo_of_item_error(loc: Loc, kind: str) -> bool:
        # A list with a broken item is also reported as "too short" (only valid items count).
        return kind == "too_short" and any(o[: len(loc)] == loc and len(o) > len(loc) for o in locs)

    return [
        f"{_format_loc(loc)}: {message}"
        for loc, kind, message in errors
        if kind not in skip and not echo_of_item_error(loc, kind)
    ]


def parse_workflow(raw: Any, source: str = "workflow") -> Workflow:
    """Build a Workflow from a parsed YAML document; WorkflowInvalid lists every problem."""
    if not isinstance(raw, dict):
        raise WorkflowInvalid(
            f"{source} is not a workflow: expected a mapping at the top level",
            {"path": source, "problems": ["the document must be a mapping"]},
        )
    problems = unknown_key_problems(raw)
    reader = _Reader()
    workflow = reader.workflow(raw)
    if reader.errors:
        # Keep the reader's findings elsewhere in the file; where a key problem was already said
        # (better) above, the reader's own words for the same place, or its parents, are dropped.
        said = [p.split(": ", 1)[0] for p in problems]
        covered = ("extra_forbidden", "union_tag_invalid", "union_tag_not_found") if problems else ()
        for problem in validation_problems(reader.errors, skip=covered):
            where = problem.split(": ", 1)[0]
            if not any(where.startswith(w) or w.startswith(where) for w in said):
                problems.append(problem)
    elif not problems:
        assert isinstance(workflow, Workflow)
        return workflow
    raise WorkflowInvalid(
        f"{source} is invalid: {problems[0]}"
        + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
        {"path": source, "problems": problems},
    )
