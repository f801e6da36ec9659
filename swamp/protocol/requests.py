"""Every request type swamp answers, its payload shape, and the use case behind it.

The CLI, `--jsonl` and `swamp serve` all go through `handle`, so a request's result `data` is the
same document that `--json` prints for the matching command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..domain.errors import InvalidRequest

Emit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Field:
    kind: type | tuple[type, ...]
    required: bool = False


@dataclass(frozen=True)
class RequestType:
    name: str
    fields: dict[str, Field]
    handler: Callable[..., dict[str, Any]]
    needs_repo: bool = True


def _app(payload: dict[str, Any]) -> Any:
    from ..app.context import App

    return App.open(payload.get("repoDir"))


def _repo_init(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.repo import init

    return init(payload.get("path"))


def _workflow_list(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.workflows import list_workflows

    return list_workflows(_app(payload))


def _workflow_get(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.workflows import get_workflow

    return get_workflow(_app(payload), payload["workflow"])


def _workflow_create(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.workflows import create_workflow

    return create_workflow(_app(payload), payload["name"], payload.get("description"))


def _workflow_validate(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.workflows import validate_workflows

    return validate_workflows(_app(payload), payload.get("workflow"))


def _workflow_run(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.run import run_workflow

    return run_workflow(_app(payload), payload["workflow"], payload.get("inputs") or {}, emit=emit)


def _workflow_history(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.history import history

    return history(_app(payload), payload.get("workflow"), payload.get("limit"))


def _workflow_history_get(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.history import history_get

    return history_get(_app(payload), payload["run"])


def _workflow_approve(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    return _decide(payload, approved=True)


def _workflow_reject(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    return _decide(payload, approved=False)


def _decide(payload: dict[str, Any], *, approved: bool) -> dict[str, Any]:
    from ..app.gates import decide

    return decide(
        _app(payload),
        payload["workflow"],
        payload["step"],
        approved=approved,
        run_ref=payload.get("run"),
        job=payload.get("job"),
        reason=payload.get("reason"),
        claim_timeout=payload.get("claimTimeout"),
    )


def _workflow_approvals(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.gates import list_approvals

    return list_approvals(_app(payload), payload.get("workflow"))


def _workflow_resume(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.resume import resume

    return resume(
        _app(payload),
        payload["workflow"],
        run_ref=payload.get("run"),
        inputs=payload.get("inputs"),
        from_step=payload.get("from"),
        claim_timeout=payload.get("claimTimeout"),
        emit=emit,
    )


def _workflow_cancel(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.cancel import cancel

    return cancel(
        _app(payload),
        payload["workflow"],
        run_ref=payload.get("run"),
        reason=payload.get("reason"),
        claim_timeout=payload.get("claimTimeout"),
    )


def _model_list(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.models import list_models

    return list_models(_app(payload))


def _model_get(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.models import get_model

    return get_model(_app(payload), payload["model"])


def _model_create(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.models import create_model

    return create_model(_app(payload), payload["type"], payload["name"])


def _model_type_list(payload: dict[str, Any], emit: Emit) -> dict[str, Any]:
    from ..app.models import list_model_types

    return list_model_types(_app(payload))


REPO = {"repoDir": Field(str)}
CLAIM = {"claimTimeout": Field((int, float))}
DECISION = {
    **REPO,
    **CLAIM,
    "workflow": Field(str, True),
    "step": Field(str, True),
    "run": Field(str),
    "job": Field(str),
    "reason": Field(str),
}

REQUEST_TYPES: dict[str, RequestType] = {
    r.name: r
    for r in [
        RequestType("repo.init", {"path": Field(str)}, _repo_init, needs_repo=False),
        RequestType("workflow.list", {**REPO}, _workflow_list),
        RequestType("workflow.get", {**REPO, "workflow": Field(str, True)}, _workflow_get),
        RequestType(
            "workflow.create", {**REPO, "name": Field(str, True), "description": Field(str)}, _workflow_create
        ),
        RequestType("workflow.validate", {**REPO, "workflow": Field(str)}, _workflow_validate),
        RequestType(
            "workflow.run", {**REPO, "workflow": Field(str, True), "inputs": Field(dict)}, _workflow_run
        ),
        RequestType(
            "workflow.history", {**REPO, "workflow": Field(str), "limit": Field(int)}, _workflow_history
        ),
        RequestType("workflow.history.get", {**REPO, "run": Field(str, True)}, _workflow_history_get),
        RequestType("workflow.approve", DECISION, _workflow_approve),
        RequestType("workflow.reject", DECISION, _workflow_reject),
        RequestType("workflow.approvals", {**REPO, "workflow": Field(str)}, _workflow_approvals),
        RequestType(
            "workflow.resume",
            {
                **REPO,
                **CLAIM,
                "workflow": Field(str, True),
                "run": Field(str),
                "inputs": Field(dict),
                "from": Field(str),
            },
            _workflow_resume,
        ),
        RequestType(
            "workflow.cancel",
            {**REPO, **CLAIM, "workflow": Field(str, True), "run": Field(str), "reason": Field(str)},
            _workflow_cancel,
        ),
        RequestType("model.list", {**REPO}, _model_list),
        RequestType("model.get", {**REPO, "model": Field(str, True)}, _model_get),
        RequestType(
            "model.create", {**REPO, "type": Field(str, True), "name": Field(str, True)}, _model_create
        ),
        RequestType("model.type.list", {**REPO}, _model_type_list),
    ]
}

_KIND_NAMES = {str: "a string", int: "an integer", dict: "an object", bool: "a boolean", list: "an array"}


def check_payload(request_type: RequestType, payload: Any) -> dict[str, Any]:
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        raise InvalidRequest(f"payload of '{request_type.name}' must be an object")
    unknown = sorted(set(payload) - set(request_type.fields))
    if unknown:
        raise InvalidRequest(
            f"payload of '{request_type.name}' has unknown field(s): {', '.join(unknown)}; "
            f"valid fields: {', '.join(request_type.fields) or 'none'}",
            {"unknown": unknown},
        )
    for name, spec in request_type.fields.items():
        if name not in payload or payload[name] is None:
            if spec.required:
                raise InvalidRequest(f"payload of '{request_type.name}' needs '{name}'", {"missing": name})
            continue
        value = payload[name]
        kinds = spec.kind if isinstance(spec.kind, tuple) else (spec.kind,)
        wrong_bool = isinstance(value, bool) and bool not in kinds
        if wrong_bool or not isinstance(value, kinds):
            wanted = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
            raise InvalidRequest(
                f"'{name}' in the payload of '{request_type.name}' must be {wanted}", {"field": name}
            )
    return payload


def lookup(name: Any) -> RequestType:
    if not isinstance(name, str) or name not in REQUEST_TYPES:
        raise InvalidRequest(
            f"unknown request type {name!r}; known types: {', '.join(sorted(REQUEST_TYPES))}",
            {"type": name},
        )
    return REQUEST_TYPES[name]


def handle(name: str, payload: Any, emit: Emit | None = None) -> dict[str, Any]:
    request_type = lookup(name)
    checked = check_payload(request_type, payload)
    return request_type.handler(checked, emit or (lambda event: None))
