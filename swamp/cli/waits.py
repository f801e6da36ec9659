"""workflow signal / waits / wait show: the wait_for_signal commands."""

from __future__ import annotations

import os
import sys
from typing import Any

from .common import (
    Group,
    _drop_none,
    call,
    claim_option,
    click,
    output_options,
    wide_option,
)
from .complete import wait_ids, workflow_names
from .output import out, style

MAX_STDIN_PAYLOAD = 16 * 1024 + 1


@click.command("signal")
@click.argument("wait_id", metavar="WAIT_ID", shell_complete=wait_ids)
@click.option("--payload", "payload_text", metavar="JSON", help="The message: JSON text, or - to read stdin.")
@click.option("--payload-file", type=click.Path(dir_okay=False), help="Read the message from FILE.")
@click.option("--check", is_flag=True, help="Validate the message against the wait without recording it.")
@claim_option
@output_options
@click.pass_context
def workflow_signal(
    ctx: click.Context,
    wait_id: str,
    payload_text: str | None,
    payload_file: str | None,
    check: bool,
    claim_timeout: float | None,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Deliver a JSON message to the open wait WAIT_ID (checked against the wait's schema).

    At a terminal, without --payload or --payload-file, it asks for the message from the wait's
    schema, shows it, and sends it only once you confirm.

    \b
    Examples:
      swamp workflow signal wait_3bq... --payload '{"verdict":"ship"}'
      echo '{"verdict":"fix"}' | swamp workflow signal wait_3bq... --payload -
      swamp workflow signal wait_3bq... --payload-file verdict.json --check
      swamp workflow signal wait_3bq...     # at a terminal: asks, then confirms
    """
    raw: bytes
    if payload_text is None and payload_file is None and _at_terminal(ctx, as_json):
        raw = _prompted(ctx, {"waitId": wait_id}, repo_dir)  # the payload prompt (swamp/cli/prompt.py)
    elif (payload_text is None) == (payload_file is None):
        raise click.UsageError(
            "give the message with exactly one of --payload JSON, --payload - or --payload-file FILE"
            " (at a terminal, leave them all out to be asked for it)"
        )
    elif payload_file is not None:
        try:
            with open(payload_file, "rb") as handle:
                raw = handle.read(MAX_STDIN_PAYLOAD)
        except OSError as exc:
            raise click.UsageError(f"--payload-file {payload_file}: {exc.strerror}") from None
    elif payload_text == "-":
        raw = sys.stdin.buffer.read(MAX_STDIN_PAYLOAD)
    else:
        assert payload_text is not None
        raw = os.fsencode(payload_text)

    def render(data: dict[str, Any]) -> None:
        if data.get("valid"):
            out(
                f"{style('Valid', 'green')}: the message fits wait {data['waitId']} "
                f"(step {data['stepName']}); "
                "nothing was recorded"
            )
            return
        sig = data["signal"]
        out(
            f"{style('Signal accepted', 'green')}: {sig['id']} for wait {data['waitId']} "
            f"(step {data['jobName']}.{data['stepName']} of {data['workflowName']}, run {data['runId']})"
        )
        for command in data.get("next", []):
            out(f"  Next: {command}")

    payload = _drop_none(
        {
            "waitId": wait_id,
            "payloadText": raw,
            "claimTimeout": claim_timeout,
            "check": True if check else None,
        }
    )
    call(ctx, "workflow.signal", payload, as_json=as_json, repo_dir=repo_dir, render=render)


def _at_terminal(ctx: click.Context, as_json: bool) -> bool:
    from .common import _as_json

    return sys.stdin.isatty() and sys.stdout.isatty() and not _as_json(ctx, as_json)


def _prompted(ctx: click.Context, address: dict[str, Any], repo_dir: str | None) -> bytes:
    """Ask for the payload of the wait `address` names; nothing is sent if the person cancels.
    A wait that is not open is not asked about: the signal request then refuses it as usual."""
    from ..domain.errors import SwampError
    from ..protocol.requests import handle
    from .common import _repo_dir
    from .output import err, print_error
    from .prompt import Declined, ask_payload

    directory = _repo_dir(ctx, repo_dir)
    try:
        wait = handle("workflow.wait.show", {**address, **({"repoDir": directory} if directory else {})})
    except SwampError as exc:
        print_error(exc, False)
        ctx.exit(exc.exit_code)
    if wait.get("status") != "open":
        return b""
    try:
        return ask_payload(wait)
    except (KeyboardInterrupt, EOFError):
        err("\nCancelled: nothing was sent.")
        ctx.exit(130)
    except Declined:
        err("Not sent.")
        ctx.exit(1)


@click.command("waits")
@click.option(
    "--workflow",
    "workflow_name",
    metavar="WORKFLOW",
    shell_complete=workflow_names,
    help="Only this workflow's waits.",
)
@click.option(
    "--expiring-within",
    metavar="DURATION",
    help="Only waits whose deadline is within DURATION (30m, 2h, 1d).",
)
@click.option("--all", "show_all", is_flag=True, help="Also show expired waits, marked expired.")
@wide_option
@output_options
@click.pass_context
def workflow_waits(
    ctx: click.Context,
    workflow_name: str | None,
    expiring_within: str | None,
    show_all: bool,
    wide: bool,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """List open signal waits: ID, workflow, run, job, step, deadline, time left, schema.

    At a narrow terminal the deadline, the run and the schema give way first (the wait ID names
    the run: swamp workflow wait show WAIT_ID); --wide shows every column whole. On a pipe the
    table is plain, every cell whole; programs should read --json.

    \b
    Examples:
      swamp workflow waits
      swamp workflow waits --wide
      swamp workflow waits --workflow release --expiring-within 2h --json
    """
    from .render import table, time_left

    def render(data: dict[str, Any]) -> None:
        if not data["waits"]:
            out("No open waits.")
            if not show_all and _expired_waits(ctx, payload, repo_dir):
                out("Some waits are past their deadline; see them with: swamp workflow waits --all")
            return
        table(
            [
                [
                    w["waitId"],
                    w["workflowName"],
                    w["runId"],
                    f"{w['jobName']}.{w['stepName']}",
                    w["deadline"],
                    "expired" if w["expired"] else time_left(w["secondsLeft"]),
                    summarize_schema(w["schema"]),
                ]
                for w in data["waits"]
            ],
            ["WAIT", "WORKFLOW", "RUN", "STEP", "DEADLINE", "LEFT", "SCHEMA"],
            wide=wide,
            drop=("DEADLINE", "RUN", "SCHEMA", "WORKFLOW"),
        )
        if any(not w["expired"] for w in data["waits"]):
            out("Send one with: swamp workflow signal WAIT_ID --payload '<json>'")
            out("  (its schema and an example: swamp workflow wait show WAIT_ID)")
        if any(w["expired"] for w in data["waits"]):
            out("An expired wait takes no signal (wait_expired); resuming its run fails the step")
            out("  (wait_timeout): swamp workflow resume WORKFLOW --run RUN_ID")

    within: float | None = None
    if expiring_within is not None:
        from ..domain.errors import InvalidRequest
        from ..protocol.requests import parse_duration

        try:
            within = parse_duration(expiring_within)
        except InvalidRequest as exc:
            raise click.BadParameter(exc.message, param_hint="--expiring-within") from None
    payload: dict[str, Any] = _drop_none(
        {"workflow": workflow_name, "expiringWithin": within, "all": True if show_all else None}
    )
    call(ctx, "workflow.waits", payload, as_json=as_json, repo_dir=repo_dir, render=render)


def _expired_waits(ctx: click.Context, payload: dict[str, Any], repo_dir: str | None) -> bool:
    """Whether the same listing with --all would show expired waits (to say how to see them)."""
    from ..protocol.requests import handle
    from .common import _repo_dir

    directory = _repo_dir(ctx, repo_dir)
    request = {**payload, "all": True, **({"repoDir": directory} if directory else {})}
    return any(w["expired"] for w in handle("workflow.waits", request)["waits"])


def summarize_schema(schema: Any) -> str:
    if not isinstance(schema, dict) or not schema:
        return "any JSON"
    props = schema.get("properties")
    if isinstance(props, dict) and props:
        required = set(schema.get("required") or [])
        parts = []
        for name, prop in props.items():
            kind = prop.get("type", "any") if isinstance(prop, dict) else "any"
            if isinstance(prop, dict) and prop.get("enum"):
                kind = "|".join(str(v) for v in prop["enum"])
            parts.append(f"{name}{'' if name in required else '?'}: {kind}")
        return "{" + ", ".join(parts) + "}"
    return str(schema.get("type", "schema"))


@click.group("wait", cls=Group)
def workflow_wait() -> None:
    """Inspect one signal wait.

    \b
    Example:
      swamp workflow wait show WAIT_ID
    """


@workflow_wait.command("show")
@click.argument("wait_id", metavar="WAIT_ID", shell_complete=wait_ids)
@output_options
@click.pass_context
def workflow_wait_show(ctx: click.Context, wait_id: str, as_json: bool, repo_dir: str | None) -> None:
    """Show wait WAIT_ID whole: its schema and an example payload, or its receipt once settled.

    \b
    Example:
      swamp workflow wait show wait_3bq...
    """
    import json

    def render(data: dict[str, Any]) -> None:
        out(f"Wait {style(data['waitId'], bold=True)}: {data['status']}")
        out(
            f"  workflow {data['workflowName']}, run {data['runId']}, "
            f"step {data['jobName']}.{data['stepName']}"
        )
        if data.get("description"):
            out(f"  {data['description']}")
        out(f"  opened {data['openedAt']}, deadline {data['deadline']}")
        out("  schema: " + json.dumps(data["schema"], ensure_ascii=False))
        if data.get("receipt"):
            receipt = data["receipt"]
            from .render import who

            sender = who(receipt["submittedBy"], receipt)
            out(f"  received {receipt['id']} at {receipt['receivedAt']} from {sender}")
            out("  payload: " + json.dumps(data.get("payload"), ensure_ascii=False))
        for command in data.get("next", []):
            out(f"  Next: {command}")

    call(ctx, "workflow.wait.show", {"waitId": wait_id}, as_json=as_json, repo_dir=repo_dir, render=render)
