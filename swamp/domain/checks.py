"""The checks `swamp workflow validate` lists, also run before every run starts."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .definition import Step, Workflow
from .errors import ExpressionError, InputInvalid, UnsafeShellText, WorkflowInvalid
from .expressions import ExpressionEngine, expressions_in
from .graph import Node, duplicate_names, find_cycle
from .inputs import InputValidationService
from .shellwords import ShellArguments, scan

# The shell arguments of a model's method, or None when the model or method is not known (yet).
ShellLookup = Callable[[str, str], ShellArguments | None]

RUNTIME_NAMES = re.compile(r"\b(steps|self|run|env)\b")


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "passed": self.passed}
        if self.error:
            out["error"] = self.error
        return out


def expression_sites(workflow: Workflow) -> Iterator[tuple[str, str]]:
    """(where, source) for every `${{ }}` in the workflow definition."""
    data = workflow.to_json()
    yield from _walk(data, "")


def step_expression_sites(step: Step) -> Iterator[tuple[str, str]]:
    """(field, source) for every `${{ }}` of one step in a field where expressions are evaluated
    (EXPR-002): `name`, `guard`, `forEach.in`, `task.inputs.run`, `task.prompt`, ...; the step's
    own `description` is literal text."""
    for field, source, _ in step_expression_texts(step):
        yield field, source


def step_expression_texts(step: Step) -> Iterator[tuple[str, str, str]]:
    """(field, source, text) as `step_expression_sites`, with the whole text of the field."""
    data = step.to_json()
    data.pop("description", None)
    yield from _walk_texts(data, "")


def _walk(value: Any, path: str) -> Iterator[tuple[str, str]]:
    for field, source, _ in _walk_texts(value, path):
        yield field, source


def _walk_texts(value: Any, path: str) -> Iterator[tuple[str, str, str]]:
    if isinstance(value, str):
        for source in expressions_in(value):
            yield path, source, value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key == "schema":  # a wait's payload schema is data, not a template
                continue
            yield from _walk_texts(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk_texts(item, f"{path}[{i}]")


def run_checks(
    workflow: Workflow,
    expressions: ExpressionEngine,
    validation: InputValidationService,
    shell_arguments: ShellLookup | None = None,
) -> list[Check]:
    checks: list[Check] = []

    def add(name: str, problems: list[str]) -> None:
        checks.append(Check(name, not problems, "; ".join(problems) or None))

    add("Schema validation", [])
    add(
        "Unique job names",
        [
            f"Duplicate job names: {', '.join(d)}"
            for d in [duplicate_names(j.name for j in workflow.jobs)]
            if d
        ],
    )
    job_names = {j.name for j in workflow.jobs}
    for job in workflow.jobs:
        dups = duplicate_names(s.name for s in job.steps)
        add(
            f"Unique step names in job '{job.name}'",
            [f"Duplicate step names: {', '.join(dups)}"] if dups else [],
        )
    bad_jobs = [f"{j.name} -> {d.job}" for j in workflow.jobs for d in j.dependsOn if d.job not in job_names]
    add(
        "Valid job dependency references",
        [f"Invalid job references: {', '.join(bad_jobs)}"] if bad_jobs else [],
    )
    for job in workflow.jobs:
        names = {s.name for s in job.steps}
        bad = [f"{s.name} -> {d.step}" for s in job.steps for d in s.dependsOn if d.step not in names]
        add(
            f"Valid step dependency references in job '{job.name}'",
            [f"Invalid step references: {', '.join(bad)}"] if bad else [],
        )
    cycle = find_cycle([Node(j.name, j.weight, tuple(d.job for d in j.dependsOn)) for j in workflow.jobs])
    add("No cyclic job dependencies", [f"Cyclic dependency detected: {' -> '.join(cycle)}"] if cycle else [])
    for job in workflow.jobs:
        cycle = find_cycle([Node(s.name, s.weight, tuple(d.step for d in s.dependsOn)) for s in job.steps])
        add(
            f"No cyclic step dependencies in job '{job.name}'",
            [f"Cyclic dependency detected: {' -> '.join(cycle)}"] if cycle else [],
        )
    if workflow.inputs is not None:
        add("Inputs schema", [f"inputs{p}" for p in validation.schema_problems(workflow.inputs)])
    from .definition import WaitForSignalTask

    wait_problems = []
    for job in workflow.jobs:
        for step in job.steps:
            if isinstance(step.task, WaitForSignalTask):
                wait_problems += [
                    f"step '{step.name}' task.schema{p if p.startswith('/') else ': ' + p}"
                    for p in validation.schema_problems(step.task.schema_)
                ]
    add("Wait schemas", wait_problems)
    problems = []
    for where, source in expression_sites(workflow):
        try:
            expressions.compile(source)
        except ExpressionError as exc:
            problems.append(f"{where}: ${{{{ {source} }}}}: {exc.message}")
    add("Expressions compile", problems)
    if shell_arguments is not None:
        add("Shell arguments", shell_problems(workflow, shell_arguments))
    return checks


def shell_problems(workflow: Workflow, shell_arguments: ShellLookup) -> list[str]:
    """Every expression in a shell argument whose context has no safe form (MODEL-015, WF-021)."""
    from .definition import ModelMethodTask

    problems: list[str] = []
    for job in workflow.jobs:
        for step in job.steps:
            task = step.task
            if not isinstance(task, ModelMethodTask) or not isinstance(task.inputs, dict):
                continue
            if not any(isinstance(v, str) and "${{" in v for v in task.inputs.values()):
                continue
            shell = shell_arguments(task.modelIdOrName, task.methodName)
            if shell is None:
                continue
            for key in sorted(shell.names):
                text = task.inputs.get(key)
                if not isinstance(text, str):
                    continue
                try:
                    scan(text, inline=not shell.by_environment)
                except UnsafeShellText as exc:
                    problems.append(f"step '{step.name}' task.inputs.{key}: {exc.message}")
    return problems


def ensure_runnable(
    workflow: Workflow,
    expressions: ExpressionEngine,
    validation: InputValidationService,
    source: str,
    shell_arguments: ShellLookup | None = None,
) -> None:
    failed = [c for c in run_checks(workflow, expressions, validation, shell_arguments) if not c.passed]
    if failed:
        problems = [f"{c.name}: {c.error}" for c in failed]
        raise WorkflowInvalid(
            f"{source} is invalid: {problems[0]}. See: swamp workflow validate {workflow.name}",
            {"path": source, "problems": problems},
        )


def check_input_expressions(
    workflow: Workflow, expressions: ExpressionEngine, inputs: dict[str, Any]
) -> None:
    """Evaluate every expression that reads only `inputs`, so a missing input stops the run early."""
    from .expressions import Scope

    scope = Scope({"inputs": inputs})
    for where, source in expression_sites(workflow):
        if "inputs" not in source or RUNTIME_NAMES.search(source):
            continue
        try:
            expressions.evaluate(source, scope)
        except ExpressionError as exc:
            raise InputInvalid(
                f"{where}: ${{{{ {source} }}}} cannot be evaluated with the given inputs: {exc.message}. "
                "Check the --input values and run again",
                {"where": where, "expression": source},
            ) from None
