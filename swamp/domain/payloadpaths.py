"""Payload paths that a wait's schema does not guarantee: the warnings of `swamp workflow validate`.

A `wait_for_signal` step's payload is whatever passed the schema captured with the wait, so an
expression that reads `steps.<wait>.outputs.payload.a.b` stops the run with "no such key" when
the schema lets `a` or `b` be absent, or lets `a` be something other than an object. The schema is
in the workflow file, so validate can say so before any run, naming the place, the path, why, and
the `has()` form that reads it safely (WF-034 .. WF-037). These are warnings, never failures: the
people who send the payloads may know more than the schema says.

What an expression reads is taken from the tree CEL evaluates (celtree.py), never from its text:
an access chain `steps.<w>.outputs.payload` followed by field selections and constant indexes.
A `has()` of a path anywhere in the same expression guards that path (CEL's `&&` and `||` absorb
the error of a missing key when the other side decides, so the order does not matter).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from .celtree import Node
from .checks import step_expression_texts
from .definition import WaitForSignalTask, Workflow
from .errors import ExpressionError
from .expressions import EXPRESSION, ExpressionEngine

Selector = str | int
# How many alternatives (anyOf/oneOf branches multiplied out) a schema may have before the check
# gives up on it (and says nothing): payload schemas are small; this bounds a pathological one.
_MAX_ALTERNATIVES = 64


@dataclass(frozen=True)
class PayloadWarning:
    job: str
    step: str
    field: str
    expression: str
    path: str
    reason: str
    fix: str
    yaml: str  # the field's line with the fix in place, valid YAML as shown (WF-044)

    @property
    def message(self) -> str:
        return (
            f"job '{self.job}' step '{self.step}' {self.field}: {self.path} may be absent "
            f"({self.reason}); guard it with has(): {self.fix}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": "payload_path_not_guaranteed",
            "job": self.job,
            "step": self.step,
            "field": self.field,
            "expression": self.expression,
            "path": self.path,
            "reason": self.reason,
            "fix": self.fix,
            "yaml": self.yaml,
            "message": self.message,
        }


def payload_warnings(workflow: Workflow, expressions: ExpressionEngine) -> list[PayloadWarning]:
    """Every read of a payload path that a wait's schema does not guarantee (WF-034), in file order."""
    warnings: list[PayloadWarning] = []
    for job in workflow.jobs:
        for step in job.steps:
            for field, source, text in step_expression_texts(step):
                try:
                    tree = expressions.syntax_tree(source)
                except ExpressionError:
                    continue  # `Expressions compile` reports it
                schema_of = partial(_wait_schema, workflow, job.name)
                for path, reason, fix in _unguarded_reads(tree, source, schema_of):
                    pasted = yaml_line(field, _with_fix(text, source, fix))
                    warning = PayloadWarning(job.name, step.name, field, source, path, reason, fix, pasted)
                    warnings.append(warning)
    return warnings


def _with_fix(text: str, source: str, fix: str) -> str:
    """The field's text with the expression `source` replaced by `fix` (each occurrence)."""
    return EXPRESSION.sub(lambda m: f"${{{{ {fix} }}}}" if m.group(1) == source else m.group(0), text)


def yaml_line(field: str, text: str) -> str:
    """`key: 'text'` (a list item: `- 'text'`) that YAML reads back as `text`: single-quoted with
    each ' doubled, or, when the text spans lines or holds control characters, double-quoted with
    JSON's escapes (which YAML's double-quoted style shares). A plain scalar would break on the
    `: ` of a `cond ? a : b` (issue 30)."""
    last = field.rsplit(".", 1)[-1]
    lead = "-" if last.endswith("]") else f"{last}:"
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text):
        return f"{lead} {json.dumps(text, ensure_ascii=False)}"
    quoted = text.replace("'", "''")
    return f"{lead} '{quoted}'"


def _wait_schema(workflow: Workflow, job_name: str, step_name: str) -> dict[str, Any] | bool | None:
    """The payload schema of the wait step `steps.<step_name>` names from job `job_name`, or None
    when that step is no wait. As at run time, a step of the job itself comes before another job's
    (the last job in the file among those), and an expanded forEach name `<template>-<key>` means
    its template when no step has that exact name."""
    own = workflow.job(job_name)
    for job in (own, *reversed([j for j in workflow.jobs if j is not own])):
        for step in job.steps:
            if step.name == step_name:
                return step.task.schema_ if isinstance(step.task, WaitForSignalTask) else None
    for job in (own, *reversed([j for j in workflow.jobs if j is not own])):
        for step in job.steps:
            if (
                step.forEach is not None
                and "${{" not in step.name
                and step_name.startswith(step.name + "-")
                and isinstance(step.task, WaitForSignalTask)
            ):
                return step.task.schema_
    return None


SchemaOf = Callable[[str], "Mapping[str, Any] | bool | None"]  # step name -> its wait's schema


def _unguarded_reads(tree: Node, source: str, schema_of: SchemaOf) -> list[tuple[str, str, str]]:
    """(path, reason, fix) for each payload path the expression reads without the schema or a
    `has()` making sure it is there. The fix is the one expression that tests every such path."""
    reads: list[tuple[str, tuple[Selector, ...]]] = []
    guards: set[tuple[str, tuple[Selector, ...]]] = set()
    _collect(tree, reads, guards)
    found: list[tuple[str, str]] = []  # (path, reason)
    tests: list[str] = []
    for step_name, path in dict.fromkeys(reads):
        schema = schema_of(step_name)
        if schema is None:
            continue
        needed = [
            (path[: i + 1], reason)
            for i, reason in enumerate(_absence_reasons(schema, path))
            if reason is not None and (step_name, path[: i + 1]) not in guards
        ]
        if needed:
            found.append((_show(step_name, path), needed[0][1]))
            tests += [f"has({_show(step_name, prefix)})" for prefix, _ in needed]
    tests = list(dict.fromkeys(tests))
    if not found:
        return []
    test = " && ".join(tests)
    chain = _payload_chain(tree)
    if chain is not None:  # the expression is the path itself: give it a value when absent
        fix = f'{test} ? {_show(*chain)} : ""'
    elif tree.kind == "call" and tree.name in ("_!=_", "!_"):
        # A negative test means "anything but": an absent path keeps that meaning (true), where
        # `has(...) && ...` would turn it false.
        absent = f"!{test}" if len(tests) == 1 else f"!({test})"
        fix = f"{absent} || {source}"
    elif tree.kind == "call" and tree.name in ("_||_", "_?_:_"):
        fix = f"{test} && ({source})"
    else:
        fix = f"{test} && {source}"
    return [(path, reason, fix) for path, reason in found]


def _collect(
    node: Node,
    reads: list[tuple[str, tuple[Selector, ...]]],
    guards: set[tuple[str, tuple[Selector, ...]]],
) -> None:
    chain = _payload_chain(node)
    if chain is not None:
        if chain[1]:
            reads.append(chain)
        return
    if node.kind == "select" and node.test_only and node.children:
        tested = _payload_chain(node.children[0])
        if tested is not None:
            guards.add((tested[0], (*tested[1], node.name)))
    for child in node.children:
        _collect(child, reads, guards)


def _payload_chain(node: Node) -> tuple[str, tuple[Selector, ...]] | None:
    """(wait step name, selectors after `payload`) when `node` reads `steps.<w>.outputs.payload...`
    by field selections and constant indexes only."""
    selectors: list[Selector] = []
    while True:
        if node.kind == "select" and not node.test_only and node.children:
            selectors.append(node.name)
            node = node.children[0]
        elif node.kind == "call" and node.name == "_[_]" and len(node.children) == 2 and not node.has_target:
            key = node.children[1]
            if key.kind != "const" or isinstance(key.value, bool) or not isinstance(key.value, (str, int)):
                return None
            selectors.append(key.value)
            node = node.children[0]
        elif node.kind == "ident" and node.name == "steps":
            break
        else:
            return None
    selectors.reverse()
    if len(selectors) < 3 or selectors[1:3] != ["outputs", "payload"] or not isinstance(selectors[0], str):
        return None
    return selectors[0], tuple(selectors[3:])


def _show(step_name: str, path: tuple[Selector, ...]) -> str:
    base = f"steps.{step_name}" if step_name.isidentifier() else f'steps["{step_name}"]'
    text = f"{base}.outputs.payload"
    for selector in path:
        if isinstance(selector, int):
            text += f"[{selector}]"
        elif selector.isidentifier():
            text += f".{selector}"
        else:
            text += f'["{selector}"]'
    return text


def _where(path: tuple[Selector, ...]) -> str:
    return _show_relative(path) if path else "the payload"


def _show_relative(path: tuple[Selector, ...]) -> str:
    text = "payload"
    for selector in path:
        text += f"[{selector}]" if isinstance(selector, int) else f".{selector}"
    return text


# -- what a schema guarantees ---------------------------------------------------------------------

Alternative = list[Mapping[str, Any]]  # schemas that all hold for one value


class _TooComplex(Exception):
    pass


def _absence_reasons(schema: Mapping[str, Any] | bool, path: tuple[Selector, ...]) -> list[str | None]:
    """For each selector of `path`, why the value it reaches may be absent although the one before
    it is present (None: the schema guarantees it). Empty when the schema is too complex to tell."""
    root = schema if isinstance(schema, Mapping) else {}
    try:
        state = _alternatives([schema], root)
        reasons: list[str | None] = []
        for depth, selector in enumerate(path):
            reasons.append(_reason(state, selector, path[:depth]))
            state = _step_into(state, selector, root)
        return reasons
    except _TooComplex:
        return []


def _alternatives(schemas: list[Any], root: Mapping[str, Any], depth: int = 0) -> list[Alternative]:
    """The schemas as alternatives (anyOf/oneOf multiplied out, $ref and allOf inlined); an
    alternative that no value can meet (`false`) is dropped."""
    if depth > 16:
        raise _TooComplex  # anyOf inside anyOf this deep: a recursive $ref
    out: list[Alternative] = [[]]
    pending = list(schemas)
    resolved = 0
    while pending:
        schema = pending.pop()
        resolved += 1
        if resolved > 4 * _MAX_ALTERNATIVES:
            raise _TooComplex
        if schema is True or schema is None:
            continue
        if schema is False:
            return []
        if not isinstance(schema, Mapping):
            continue
        ref = schema.get("$ref")
        if isinstance(ref, str):
            pending.append(_resolve(ref, root))
        parts = schema.get("allOf")
        if isinstance(parts, list):
            pending += parts
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                expanded = [_alternatives([branch], root, depth + 1) for branch in branches]
                out = [a + b for a in out for branch in expanded for b in branch]
                if len(out) > _MAX_ALTERNATIVES:
                    raise _TooComplex
        for alternative in out:
            alternative.append(schema)
    return out


def _resolve(ref: str, root: Mapping[str, Any]) -> Any:
    if not ref.startswith("#"):
        raise _TooComplex  # WF-013 / WAIT schemas refuse remote refs; nothing to tell here
    from .jsonpointer import MISSING, pointer_target

    node = pointer_target(root, filter(None, ref[1:].split("/")))
    if node is MISSING:
        raise _TooComplex
    return node


def _types(alternative: Alternative) -> set[str] | None:
    """The JSON types the alternative allows (None: any)."""
    allowed: set[str] | None = None
    for schema in alternative:
        kind = schema.get("type")
        if isinstance(kind, str):
            names = {kind}
        elif isinstance(kind, list):
            names = {k for k in kind if isinstance(k, str)}
        else:
            continue  # none given (or not a valid one: the `Wait schemas` check says so)
        if "number" in names:
            names.add("integer")
        allowed = names if allowed is None else allowed & names
    return allowed


def _reason(state: list[Alternative], selector: Selector, before: tuple[Selector, ...]) -> str | None:
    where = _where(before)
    for alternative in state:
        types = _types(alternative)
        if isinstance(selector, int):
            if types != {"array"}:
                return f"the schema does not make {where} an array"
            counts = [s["minItems"] for s in alternative if isinstance(s.get("minItems"), int)]
            least = max(counts, default=0)
            if least <= selector:
                return f"the schema does not make {where} hold at least {selector + 1} items"
            continue
        if types is None:
            return f"the schema lets {where} be any JSON value"
        if types != {"object"}:
            return f"the schema lets {where} be {' or '.join(sorted(types))}"
        if not any(isinstance(s.get("required"), list) and selector in s["required"] for s in alternative):
            return f"'{selector}' is not in the required list of {where}"
    return None


def _step_into(state: list[Alternative], selector: Selector, root: Mapping[str, Any]) -> list[Alternative]:
    """The alternatives for the value at `selector`, given that it is present."""
    out: list[Alternative] = []
    for alternative in state:
        types = _types(alternative)
        wanted = "array" if isinstance(selector, int) else "object"
        if types is not None and wanted not in types:
            continue  # under this alternative the value cannot have been reached
        children: list[Any] = []
        for schema in alternative:
            if isinstance(selector, int):
                prefix = schema.get("prefixItems")
                if isinstance(prefix, list) and selector < len(prefix):
                    children.append(prefix[selector])
                elif "items" in schema:
                    children.append(schema["items"])
            else:
                properties = schema.get("properties")
                if isinstance(properties, Mapping) and selector in properties:
                    children.append(properties[selector])
                elif "additionalProperties" in schema and "patternProperties" not in schema:
                    children.append(schema["additionalProperties"])
        out += _alternatives(children, root)
        if len(out) > _MAX_ALTERNATIVES:
            raise _TooComplex
    return out
