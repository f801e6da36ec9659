"""Which optional features a scenario uses, found mechanically from what it sends and writes.

`scripts/export-conformance` refuses a scenario that uses a feature it does not declare in
`features` (conformance/FORMAT.md §2), so that `--features core` never selects a scenario needing
approval gates, `--jsonl`, forEach and the rest. The rules read only the scenario: the argv words
of its `run` steps and sessions, its `jsonl` steps and the frames it sends (their `type` and
`payload`), the text of the files it writes (`files:` and `write` steps), its expectations, and
the OS accounts it declares or runs a step `as:` (`os-accounts`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

# argv words (of a `run` step or a session's `args`) that need a feature
_WORDS = {
    "approve": "gates",
    "reject": "gates",
    "approvals": "gates",
    "--jsonl": "jsonl",
    "watch": "watch",
    "--watch": "watch",
    "events": "events",
    "serve": "serve",
    "--socket": "unix-socket",
    "grant": "access",
    "revoke": "access",
    "--token": "access",
    "--token-file": "access",
    "--override": "access",
    "--connect": "access",
    "--socket-access": "access",
    "gateway": "gateway",
}
# the `type` of a request a scenario sends (a `jsonl` step, a session `send`)
_REQUESTS = {
    "workflow.approve": "gates",
    "workflow.reject": "gates",
    "workflow.approvals": "gates",
    "workflow.watch": "watch",
    "events.subscribe": "events",
    "workflow.wait.grant": "access",
    "workflow.wait.revoke": "access",
    "workflow.wait.link": "gateway",
    "workflow.link.show": "gateway",
}
# a field of a request's payload that needs a feature
_PAYLOAD_KEYS = {"token": "access", "override": "access"}
# text of a file the scenario writes
_FILE_TEXT = (
    ("manual_approval", re.compile(r"\bmanual_approval\b"), "gates"),
    ("forEach", re.compile(r"\bforEach\b"), "foreach"),
    ("hooks:", re.compile(r"(?m)^[ \t]*(?:-[ \t]+)?hooks:|\bhooks:[ \t]*\{|\"hooks\"[ \t]*:"), "hooks"),
    ("answerers:", re.compile(r"\banswerers\b"), "access"),
    ("approvers:", re.compile(r"\bapprovers\b"), "access"),
)
# keys and strings of an expectation that only a held signal produces (WAIT-069..WAIT-078)
_HELD_KEYS = ("held", "heldAt", "heldRefused")
_HELD_CODES = ("signal_held", "wait_closed")
# codes of an expectation that only who-may-answer rules produce (spec/access.md)
_ACCESS_CODES = ("answerer_not_allowed", "permission_invalid", "permission_denied")


def _steps(steps: Any) -> Iterator[dict[str, Any]]:
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, dict):
            yield step
            if isinstance(step.get("session"), dict):
                yield from _steps(step.get("steps"))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)


def _expect_held(value: Any) -> bool:
    if isinstance(value, dict):
        return any(k in _HELD_KEYS or _expect_held(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_expect_held(v) for v in value)
    return isinstance(value, str) and any(code in value for code in _HELD_CODES)


def _expect_access(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_expect_access(v) for v in value.values())
    if isinstance(value, list):
        return any(_expect_access(v) for v in value)
    return isinstance(value, str) and any(code in value for code in _ACCESS_CODES)


def features_used(data: dict[str, Any]) -> dict[str, list[str]]:
    """Feature name -> why the scenario (its YAML document as data) needs it."""
    found: dict[str, list[str]] = {}

    def need(feature: str, why: str) -> None:
        reasons = found.setdefault(feature, [])
        if why not in reasons:
            reasons.append(why)

    written = [_text(v) for v in (data.get("files") or {}).values()]
    for key in ("accounts", "groups"):
        if data.get(key):
            need("os-accounts", f"top-level `{key}:`")
    if isinstance(data.get("env"), dict) and "_SWAMP_COMPLETE" in data["env"]:
        need("shell-completion", "`_SWAMP_COMPLETE` in its env")
    for number, step in enumerate(_steps(data.get("steps")), 1):
        argv: list[Any] = []
        if isinstance(step.get("run"), list):
            argv = step["run"]
        elif isinstance(step.get("session"), dict):
            argv = step["session"].get("args") or []
        words = [w for w in argv if isinstance(w, str)]
        for word in words:
            if word in _WORDS:
                need(_WORDS[word], f"argv word {word!r}")
        if "--from" in words and "resume" in words:
            need("resume-from", "argv `resume --from`")
        if "jsonl" in step:
            need("jsonl", "a `jsonl` step")
        if "link" in words and "wait" in words:
            need("gateway", "argv `wait link`")
        if "http" in step:
            need("gateway", "an `http` step")
        session = step.get("session")
        if ("as" in step and "connect" not in step) or (isinstance(session, dict) and "as" in session):
            need("os-accounts", f"step {number} runs `as:` another OS account")
        if "connect" in step:
            need("unix-socket", "a `connect` step")
        if "signal" in step and not isinstance(step.get("run"), list):
            need("posix-signals", "a session `signal` step")
        requests = step.get("jsonl") if "jsonl" in step else step.get("send")
        for request in requests if isinstance(requests, list) else [requests]:
            if not isinstance(request, dict):
                continue
            kind = request.get("type")
            payload = request.get("payload")
            if kind in _REQUESTS:
                need(_REQUESTS[str(kind)], f"request {kind!r}")
            for key in payload if isinstance(payload, dict) else ():
                if key in _PAYLOAD_KEYS:
                    need(_PAYLOAD_KEYS[key], f"a request payload with `{key}`")
            if kind == "workflow.resume" and isinstance(payload, dict) and "from" in payload:
                need("resume-from", "request 'workflow.resume' with `from`")
            if kind == "workflow.run" and isinstance(payload, dict) and payload.get("watch"):
                need("watch", "request 'workflow.run' with `watch`")
        if isinstance(step.get("env"), dict) and "_SWAMP_COMPLETE" in step["env"]:
            need("shell-completion", f"step {number} has `_SWAMP_COMPLETE` in its env")
        if isinstance(step.get("write"), dict):
            written += [_text(v) for v in step["write"].values()]
        if _expect_held(step.get("expect")):
            need("held-signals", f"step {number} expects a held signal (held, heldAt, signal_held, ...)")
        if _expect_access(step.get("expect")):
            need("access", f"step {number} expects a who-may-answer code ({', '.join(_ACCESS_CODES)})")
    for text in written:
        for label, pattern, feature in _FILE_TEXT:
            if pattern.search(text):
                need(feature, f"a file it writes has `{label}`")
    return found


def undeclared(data: dict[str, Any]) -> dict[str, list[str]]:
    """The features the scenario uses but does not list in `features`, with the reasons."""
    declared = set(data.get("features") or [])
    return {f: why for f, why in sorted(features_used(data).items()) if f not in declared}
