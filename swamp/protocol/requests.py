"""Every request type swamp answers and the use case behind it.

The CLI, `--jsonl` and `swamp serve` all go through `handle`, so a request's result `data` is the
same document that `--json` prints for the matching command. What each payload may hold is said
once, in spec/schemas/requests.schema.json; `handle` checks a payload with that schema, compiled
(payloads.py), before the use case sees it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..domain.actors import Actor
from ..domain.errors import InvalidRequest, StorageError
from .payloads import request_schemas

Emit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class RequestType:
    name: str
    handler: Callable[..., dict[str, Any]]
    needs_repo: bool = True
    # Answering it executes a run (and so is hosted by serve, stopped by Ctrl-C / SIGTERM in a CLI,
    # never handed to a helper process). Any answer given `"resume": true` does too: see `executes`.
    executes_run: bool = False


def _app(payload: dict[str, Any], actor: Actor | None) -> Any:
    """The repository's shared App, acting for `actor` (None: this process's own user)."""
    from ..app.context import App

    return App.shared(payload.get("repoDir")).acting_as(actor)


def _repo_init(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.repo import init

    return init(payload.get("path"))


def _store_status(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.store import status

    return status(payload.get("repoDir"))


def _store_migrate(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.store import migrate

    return migrate(payload.get("repoDir"))


def _store_copy(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.copy import copy

    return copy(payload.get("repoDir"), payload["to"], payload.get("from"))


def _workflow_list(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.workflows import list_workflows

    return list_workflows(_app(payload, actor))


def _workflow_get(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.workflows import get_workflow

    return get_workflow(_app(payload, actor), payload["workflow"])


def _workflow_create(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.workflows import create_workflow

    return create_workflow(_app(payload, actor), payload["name"], payload.get("description"))


def _workflow_validate(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.workflows import validate_workflows

    return validate_workflows(_app(payload, actor), payload.get("workflow"))


def _workflow_run(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.run import run_workflow

    return run_workflow(_app(payload, actor), payload["workflow"], payload.get("inputs") or {}, emit=emit)


def _workflow_history(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.history import history

    return history(_app(payload, actor), payload.get("workflow"), payload.get("limit"))


def _workflow_history_get(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.history import history_get

    return history_get(_app(payload, actor), payload["run"])


def _workflow_approve(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    return _decide(payload, actor, approved=True, emit=emit)


def _workflow_reject(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    return _decide(payload, actor, approved=False)


def _decide(
    payload: dict[str, Any], actor: Actor | None, *, approved: bool, emit: Emit | None = None
) -> dict[str, Any]:
    from ..app.gates import decide, reject_wait

    if payload.get("waitId") is not None:
        if approved or payload.get("step") or payload.get("workflow"):
            raise InvalidRequest("'waitId' goes with workflow.reject alone, without 'workflow' and 'step'")
        from ..app.waitref import resolve_wait

        app = _app(payload, actor)
        return reject_wait(
            app,
            resolve_wait(app, payload["waitId"]),
            reason=payload.get("reason"),
            claim_timeout=payload.get("claimTimeout"),
            override=payload.get("override"),
        )
    for needed in ("workflow", "step"):
        if not payload.get(needed):
            raise InvalidRequest(f"payload needs '{needed}'", {"missing": needed})

    return decide(
        _app(payload, actor),
        payload["workflow"],
        payload["step"],
        approved=approved,
        run_ref=payload.get("run"),
        job=payload.get("job"),
        reason=payload.get("reason"),
        claim_timeout=payload.get("claimTimeout"),
        resume=bool(payload.get("resume")),
        emit=emit,
        override=payload.get("override"),
    )


def _workflow_approvals(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.gates import list_approvals

    return list_approvals(_app(payload, actor), payload.get("workflow"))


def _workflow_resume(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.resume import resume

    return resume(
        _app(payload, actor),
        payload["workflow"],
        run_ref=payload.get("run"),
        inputs=payload.get("inputs"),
        from_step=payload.get("from"),
        claim_timeout=payload.get("claimTimeout"),
        emit=emit,
    )


def _workflow_cancel(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.cancel import cancel

    return cancel(
        _app(payload, actor),
        payload["workflow"],
        run_ref=payload.get("run"),
        reason=payload.get("reason"),
        claim_timeout=payload.get("claimTimeout"),
    )


def _workflow_signal(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.signals import signal
    from ..domain.waits import parse_payload

    has_value, has_text = "payload" in payload, "payloadText" in payload
    if has_value == has_text:
        raise InvalidRequest("workflow.signal needs exactly one of 'payload' (a JSON value) or 'payloadText'")
    if payload.get("check") and payload.get("resume"):
        raise InvalidRequest("'check' records nothing, so it cannot 'resume' the run; give one of them")
    if has_text:
        text = payload["payloadText"]

        def read() -> Any:
            return parse_payload(text)

    else:
        value = payload["payload"]

        def read() -> Any:
            repeated = _repeated_keys(value)
            if repeated:
                from ..domain.waits import PayloadMalformed

                raise PayloadMalformed(f"The payload repeats the key {repeated!r}; every key may appear once")
            from ..domain.waits import check_payload_value

            check_payload_value(value)  # before dumps: a frame's overlong integer is only a marker
            try:
                text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
            except (RecursionError, ValueError) as exc:
                from ..domain.waits import PayloadMalformed

                raise PayloadMalformed(f"The payload cannot be read as JSON: {exc}") from None
            return parse_payload(text)

    app = _app(payload, actor)
    return signal(
        app,
        _wait_id(app, payload),
        read,
        check_only=bool(payload.get("check")),
        claim_timeout=payload.get("claimTimeout"),
        resume=bool(payload.get("resume")),
        emit=emit,
        override=payload.get("override"),
        token=payload.get("token"),
        delivery_id=payload.get("deliveryId"),
    )


def _expires(payload: dict[str, Any]) -> float | None:
    """A grant's or a link's `expires`: seconds, or a duration such as "2h"."""
    expires = payload.get("expires")
    return parse_duration(expires) if isinstance(expires, str) else expires


def _workflow_wait_grant(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.permissions import grant

    app = _app(payload, actor)
    return grant(
        app,
        _wait_id(app, payload),
        expires=_expires(payload),
        uses=payload.get("uses"),
        note=payload.get("note"),
        override=payload.get("override"),
        claim_timeout=payload.get("claimTimeout"),
    )


def _workflow_wait_revoke(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.permissions import revoke

    return revoke(
        _app(payload, actor),
        payload["permissionId"],
        override=payload.get("override"),
        claim_timeout=payload.get("claimTimeout"),
    )


def _workflow_wait_link(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.links import wait_link

    app = _app(payload, actor)
    return wait_link(
        app,
        _wait_id(app, payload),
        expires=_expires(payload),
        override=payload.get("override"),
        claim_timeout=payload.get("claimTimeout"),
    )


def _workflow_link_show(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.links import show

    return show(_app(payload, actor), payload["token"])


def _wait_id(app: Any, payload: dict[str, Any]) -> str:
    """The whole wait ID a payload names: `waitId` (an ID or a unique prefix), or `run` + `step`
    (+ `job`). A whole ID is taken as it is, without importing the resolver (the signal fast path)."""
    wait_ref = payload.get("waitId")
    if isinstance(wait_ref, str) and len(wait_ref) == 31 and not ({"run", "step", "job"} & payload.keys()):
        return wait_ref  # checked against the wait-ID pattern by the use case, as ever
    from ..app.waitref import resolve_wait

    return resolve_wait(
        app, wait_ref, run_ref=payload.get("run"), step=payload.get("step"), job=payload.get("job")
    )


def _repeated_keys(value: Any, depth: int = 0) -> str | None:
    """A key repeated inside a JSON-lines frame's value (the frame reader marks such objects)."""
    if depth > 200:
        return None
    duplicates = getattr(value, "duplicates", None)
    if duplicates:
        return str(duplicates[0])
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        found = _repeated_keys(child, depth + 1)
        if found:
            return found
    return None


def _workflow_waits(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.signals import list_waits

    within = payload.get("expiringWithin")
    if isinstance(within, str):
        within = parse_duration(within)
    return list_waits(
        _app(payload, actor),
        payload.get("workflow"),
        expiring_within=within,
        include_expired=bool(payload.get("all")),
        reserved=bool(payload.get("reserved")),
    )


def _workflow_wait_show(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.signals import show_wait

    app = _app(payload, actor)
    return show_wait(app, _wait_id(app, payload))


def _workflow_watch(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.watch import watch_run

    return watch_run(
        _app(payload, actor),
        payload["run"],
        timeout=payload.get("timeout"),
        emit=emit,
        from_suspension=payload.get("fromSuspension") is True,
    )


def _events_subscribe(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.events import subscribe

    return subscribe(
        _app(payload, actor),
        after=payload.get("after"),
        kinds=payload.get("kinds"),
        runs=payload.get("runs"),
        timeout=payload.get("timeout"),
        emit=emit,
    )


def parse_duration(text: str) -> float:
    """A duration of a request (domain/durations.py: 90, 90s, 10m, 1h30m, 2d, PT10M) in seconds,
    or invalid_request."""
    from ..domain.durations import parse_duration as seconds

    try:
        return seconds(text)
    except ValueError as exc:
        raise InvalidRequest(str(exc), {"duration": text}) from None


def _model_list(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.models import list_models

    return list_models(_app(payload, actor))


def _model_get(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.models import get_model

    return get_model(_app(payload, actor), payload["model"])


def _model_create(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.models import create_model

    return create_model(_app(payload, actor), payload["type"], payload["name"])


def _model_type_list(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    from ..app.models import list_model_types

    return list_model_types(_app(payload, actor))


PROTOCOL_VERSION = 1
SPEC_VERSION_FILE = Path(__file__).resolve().parent.parent / "SPEC_VERSION"


def _protocol_version(payload: dict[str, Any], emit: Emit, actor: Actor | None) -> dict[str, Any]:
    """Which spec and protocol this implementation speaks, and every request type it answers."""
    return {
        "spec": SPEC_VERSION_FILE.read_text(encoding="utf-8").strip(),
        "protocol": PROTOCOL_VERSION,
        "requestTypes": sorted(REQUEST_TYPES),
    }


REQUEST_TYPES: dict[str, RequestType] = {
    r.name: r
    for r in [
        RequestType("protocol.version", _protocol_version, needs_repo=False),
        RequestType("repo.init", _repo_init, needs_repo=False),
        RequestType("store.status", _store_status, needs_repo=False),
        RequestType("store.migrate", _store_migrate, needs_repo=False),
        RequestType("store.copy", _store_copy),
        RequestType("workflow.list", _workflow_list),
        RequestType("workflow.get", _workflow_get),
        RequestType("workflow.create", _workflow_create),
        RequestType("workflow.validate", _workflow_validate),
        RequestType("workflow.run", _workflow_run, executes_run=True),
        RequestType("workflow.history", _workflow_history),
        RequestType("workflow.history.get", _workflow_history_get),
        RequestType("workflow.approve", _workflow_approve),
        RequestType("workflow.reject", _workflow_reject),
        RequestType("workflow.approvals", _workflow_approvals),
        RequestType("workflow.resume", _workflow_resume, executes_run=True),
        RequestType("workflow.cancel", _workflow_cancel),
        RequestType("workflow.signal", _workflow_signal),
        RequestType("workflow.waits", _workflow_waits),
        RequestType("workflow.wait.show", _workflow_wait_show),
        RequestType("workflow.wait.grant", _workflow_wait_grant),
        RequestType("workflow.wait.revoke", _workflow_wait_revoke),
        RequestType("workflow.wait.link", _workflow_wait_link),
        RequestType("workflow.link.show", _workflow_link_show),
        RequestType("workflow.watch", _workflow_watch),
        RequestType("events.subscribe", _events_subscribe),
        RequestType("model.list", _model_list),
        RequestType("model.get", _model_get),
        RequestType("model.create", _model_create),
        RequestType("model.type.list", _model_type_list),
    ]
}


def executes(name: str, payload: Any) -> bool:
    """Whether answering the request may execute a run: run, resume, and an answer that continues
    the run (`resume: true` on workflow.signal or workflow.approve), which then continues it itself."""
    known = REQUEST_TYPES.get(name)
    return (known is not None and known.executes_run) or (
        isinstance(payload, dict) and payload.get("resume") is True
    )


def check_payload(request_type: RequestType, payload: Any) -> dict[str, Any]:
    """The payload, checked with its type's definition in requests.schema.json (PROTO-007)."""
    return request_schemas().check(request_type.name)(payload)


def lookup(name: Any) -> RequestType:
    if not isinstance(name, str) or name not in REQUEST_TYPES:
        raise InvalidRequest(
            f"unknown request type {name!r}; known types: {', '.join(sorted(REQUEST_TYPES))}",
            {"type": name},
        )
    return REQUEST_TYPES[name]


def handle(name: str, payload: Any, emit: Emit | None = None, actor: Actor | None = None) -> dict[str, Any]:
    """Answer one request; `actor` is who sent it (None: this process's own user, as a CLI command
    or `--jsonl` acts; serve passes a socket peer's account)."""
    request_type = lookup(name)
    checked = check_payload(request_type, payload)
    from ..hooks.report import collecting

    try:
        with collecting() as started:
            result = request_type.handler(checked, emit or (lambda event: None), actor)
    except OSError as exc:  # the store names what it could not do; anything it missed lands here
        raise StorageError.from_os_error(exc) from None
    if started:  # HOOK-016: a hook it started that failed at once is said in its answer
        from ..hooks.report import await_reports

        warnings = await_reports(started)
        if warnings:
            result = {**result, "hookWarnings": [hook_warning(entry) for entry in warnings]}
    return result


def hook_warning(entry: dict[str, Any]) -> dict[str, Any]:
    """One `hookWarnings` item (HOOK-016): a hook's first attempt that did not end ok."""
    warning = {
        key: entry.get(key)
        for key in ("hook", "event", "waitId", "runId", "code", "exitCode", "timedOut", "attempt", "attempts")
    }
    warning["retryAt"] = entry.get("retryAt")
    for key in ("error", "stderr"):
        if entry.get(key):
            warning[key] = entry[key]
    warning["next"] = f"swamp workflow wait show {entry.get('waitId')}"
    return warning
