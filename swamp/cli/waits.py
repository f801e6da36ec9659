"""workflow signal / waits / wait show: the wait_for_signal commands."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from .common import (
    DURATION,
    Group,
    _drop_none,
    call,
    call_answer,
    claim_option,
    click,
    output_options,
    wide_option,
)
from .complete import run_ids, step_names, wait_ids, workflow_names
from .output import out, style

MAX_STDIN_PAYLOAD = 16 * 1024 + 1


def wait_address_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--run/--step/--job: the wait of a step, instead of WAIT_ID."""
    func = click.option(
        "--job", metavar="JOB", help="With --step: the job, when the step name is in several."
    )(func)
    func = click.option(
        "--step",
        metavar="STEP",
        shell_complete=step_names,
        help="With --run, instead of WAIT_ID: the step whose wait it is (an expanded forEach name too).",
    )(func)
    return click.option(
        "--run",
        "run_id",
        metavar="RUN_ID",
        shell_complete=run_ids,
        help="With --step: the run (ID or prefix) holding the wait.",
    )(func)


def wait_address(
    wait_id: str | None, run_id: str | None, step: str | None, job: str | None
) -> dict[str, Any]:
    """The request fields naming the wait: WAIT_ID (an ID or a unique prefix), or --run and --step."""
    if wait_id is not None:
        if run_id or step or job:
            raise click.UsageError("give WAIT_ID, or --run RUN_ID --step STEP to name the wait, not both")
        return {"waitId": wait_id}
    if not run_id or not step:
        raise click.UsageError(
            "name the wait: WAIT_ID (or a unique prefix such as wait_3bqx), or --run RUN_ID --step STEP"
        )
    return _drop_none({"run": run_id, "step": step, "job": job})


@click.command("signal")
@click.argument("wait_id", metavar="[WAIT_ID]", required=False, shell_complete=wait_ids)
@click.option("--payload", "payload_text", metavar="JSON", help="The message: JSON text, or - to read stdin.")
@click.option("--payload-file", type=click.Path(dir_okay=False), help="Read the message from FILE.")
@click.option("--check", is_flag=True, help="Validate the message against the wait without recording it.")
@click.option(
    "--resume",
    is_flag=True,
    help="Then continue the run here, as `resume` would, when nothing else is open.",
)
@click.option(
    "--override",
    metavar="REASON",
    help="As an admin (.swamp.yaml admins), answer past the wait's answerer policy; the reason is recorded.",
)
@click.option(
    "--token",
    metavar="TOKEN",
    help="Deliver with a signal permission's token (from `wait grant`); prefer --token-file.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    help="Read the signal permission's token from FILE (kept out of the process list).",
)
@click.option(
    "--delivery-id",
    metavar="ID",
    help="Name this delivery (say, a CI job's ID): sent again, it is refused as this same delivery.",
)
@wait_address_options
@claim_option
@output_options
@click.pass_context
def workflow_signal(
    ctx: click.Context,
    wait_id: str | None,
    payload_text: str | None,
    payload_file: str | None,
    check: bool,
    resume: bool,
    override: str | None,
    token: str | None,
    token_file: str | None,
    delivery_id: str | None,
    run_id: str | None,
    step: str | None,
    job: str | None,
    claim_timeout: float | None,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Deliver a JSON message to the open wait WAIT_ID (checked against the wait's schema).

    WAIT_ID may be a unique prefix of the ID (wait_ and at least 4 more characters); or name the
    wait by its run and step with --run and --step. With --resume the run continues in this
    command once nothing else is open (exit codes then as for resume).

    A wait's ID is reserved before its step runs (earlier steps read it as
    ${{ steps.<step>.waitId }}); a signal sent before the step opens the wait is checked, held,
    and applied when it opens (see it with: swamp workflow waits --reserved).

    At a terminal, without --payload or --payload-file, it asks for the message from the wait's
    schema, shows it, and sends it only once you confirm; then, when the run waits for nothing
    more and no `swamp serve --auto-continue` will continue it, it offers to continue it here.

    With --token-file (or --token) the signal is delivered with a signal permission (swamp
    workflow wait grant), on behalf of whoever granted it: for a job that may answer this one
    wait and nothing more.

    A job that may send its answer twice (retried, run again) names it with --delivery-id: the
    same ID sent again is refused (wait_settled, exit 3) with details.sameDelivery true, so the
    job can tell its own answer, taken once, from someone else's.

    \b
    Examples:
      swamp workflow signal wait_3bq... --payload '{"verdict":"ship"}'
      swamp workflow signal wait_3bqx --payload '{"verdict":"ship"}' --resume
      swamp workflow signal --run 3f2a --step review --payload '{"verdict":"fix"}'
      echo '{"verdict":"fix"}' | swamp workflow signal wait_3bq... --payload -
      swamp workflow signal wait_3bq... --payload-file verdict.json --check
      swamp workflow signal wait_3bq...     # at a terminal: asks, then confirms
      swamp workflow signal wait_3bq... --payload '{"verdict":"ship"}' --override 'QA lead is away'
      swamp workflow signal wait_3bq... --token-file token.txt --payload '{"verdict":"ship"}'
      swamp workflow signal wait_3bq... --payload-file result.json --delivery-id "ci-$CI_JOB_ID"
    """
    address = wait_address(wait_id, run_id, step, job)
    token = _token(token, token_file)
    if check and resume:
        raise click.UsageError("--check records nothing, so it cannot --resume the run; give one of them")
    raw: bytes
    prompted = payload_text is None and payload_file is None and _at_terminal(ctx, as_json)
    if prompted:
        raw = _prompted(ctx, address, repo_dir)  # the payload prompt (swamp/cli/prompt.py)
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

    def render(data: dict[str, Any], advice: bool = True) -> None:
        if data.get("shown"):  # the prompt's follow-up has shown it (cli/answered.py)
            return
        if data.get("valid"):
            out(
                f"{style('Valid', 'green')}: the message fits wait {data['waitId']} "
                f"(step {data['stepName']}); "
                "nothing was recorded"
            )
            return
        if data.get("continued"):
            from .render import run_outcome

            run_outcome(data["run"])
            return
        sig = data["signal"]
        if data.get("held"):
            out(
                f"{style('Signal held', 'green')}: {sig['id']} for wait {data['waitId']}: step "
                f"{data['jobName']}.{data['stepName']} of {data['workflowName']} (run {data['runId']}) "
                "cannot take it yet; it is applied as soon as it can (when the step opens the wait, or, "
                "when the wait is open, when the steps still executing beside it finish)"
            )
            for command in data.get("next", []):
                out(f"  See it: {command}")
            return
        out(
            f"{style('Signal accepted', 'green')}: {sig['id']} for wait {data['waitId']} "
            f"(step {data['jobName']}.{data['stepName']} of {data['workflowName']}, run {data['runId']})"
        )
        if "stillOpen" in data:
            from .render import still_open

            still_open(data)
        if not advice:
            return
        from .answered import moved_on, serve_continues, waits_for_nothing

        if waits_for_nothing(data) and serve_continues(ctx, repo_dir):
            moved_on(data)  # CLI-038: never `resume` for a run a serve continues
            return
        for command in data.get("next", []):
            out(f"  Next: {command}")

    payload = _drop_none(
        {
            **address,
            "payloadText": raw,
            "claimTimeout": claim_timeout,
            "check": True if check else None,
            "resume": True if resume else None,
            "override": override,
            "token": token,
            "deliveryId": delivery_id,
        }
    )
    if prompted and not resume:  # CLI-039: offer to continue the run once the answer is in
        from .answered import offer

        call(
            ctx,
            "workflow.signal",
            payload,
            as_json=as_json,
            repo_dir=repo_dir,
            render=render,
            exit_code=_prompt_exit,
            then=offer(ctx, repo_dir, render),
        )
        return
    call_answer(
        ctx,
        "workflow.signal",
        payload,
        headline="Signal accepted",
        as_json=as_json,
        repo_dir=repo_dir,
        render=render,
    )


def _prompt_exit(data: dict[str, Any]) -> int:
    """After the prompt: as `resume` when it continued the run here, else 0 (130: interrupted)."""
    from .common import _answer_exit

    return int(data.get("exit") or _answer_exit(data))


MAX_TOKEN_FILE = 4096


def _token(token: str | None, token_file: str | None) -> str | None:
    """The token --token gives or --token-file holds (its surrounding white space dropped). Neither
    its text nor the file's is ever shown back (ACCESS-063)."""
    if token is not None and token_file is not None:
        raise click.UsageError("give the token with --token or --token-file, not both")
    if token_file is None:
        return token
    try:
        with open(token_file, "rb") as handle:
            raw = handle.read(MAX_TOKEN_FILE + 1)
    except OSError as exc:
        if token_file.startswith("swp_"):  # the token itself, given as a file name: not shown
            raise click.UsageError(
                "--token-file takes a FILE holding the token, not the token itself (which is not shown)"
            ) from None
        raise click.UsageError(f"--token-file {token_file}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        text = ""
    if not text or len(raw) > MAX_TOKEN_FILE:
        raise click.UsageError(
            f"--token-file {token_file} holds no token (one line: swp_ followed by 32 letters a-z and "
            "digits 2-7, as `swamp workflow wait grant` printed it)"
        )
    return text


def _at_terminal(ctx: click.Context, as_json: bool) -> bool:
    from .common import _as_json

    return sys.stdin.isatty() and sys.stdout.isatty() and not _as_json(ctx, as_json)


def _prompted(ctx: click.Context, address: dict[str, Any], repo_dir: str | None) -> bytes:
    """Ask for the payload of the wait `address` names; nothing is sent if the person cancels.
    A wait that is not open is not asked about: the signal request then refuses it as usual."""
    from ..domain.errors import EXIT_FAILED, EXIT_SIGINT, SwampError
    from .common import _repo_dir
    from .output import err, print_error
    from .prompt import Declined, ask_payload
    from .transport import handler

    directory = _repo_dir(ctx, repo_dir)
    ask = handler(ctx)
    try:
        wait = ask("workflow.wait.show", {**address, **({"repoDir": directory} if directory else {})})
    except SwampError as exc:
        print_error(exc, False)
        ctx.exit(exc.exit_code)
    if wait.get("status") != "open":
        return b""
    try:
        return ask_payload(wait)
    except (KeyboardInterrupt, EOFError):
        err("\nCancelled: nothing was sent.")
        ctx.exit(EXIT_SIGINT)
    except Declined:
        err("Not sent.")
        ctx.exit(EXIT_FAILED)


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
    type=DURATION,
    metavar="DURATION",
    help="Only waits whose deadline is within DURATION (30m, 2h, 1d).",
)
@click.option("--all", "show_all", is_flag=True, help="Also show expired waits, marked expired.")
@click.option(
    "--reserved",
    is_flag=True,
    help="Also list reserved waits (steps not reached yet) and whether each holds an early signal.",
)
@wide_option
@output_options
@click.pass_context
def workflow_waits(
    ctx: click.Context,
    workflow_name: str | None,
    expiring_within: float | None,
    show_all: bool,
    reserved: bool,
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
      swamp workflow waits --reserved
    """
    from .render import time_left
    from .tables import table

    def render(data: dict[str, Any]) -> None:
        _render_open(data)
        if "reserved" in data:
            if not data["reserved"]:
                out("No reserved waits.")
                return
            table(
                [
                    [
                        r["waitId"],
                        r["workflowName"],
                        r["runId"],
                        f"{r['jobName']}.{r['stepName']}",
                        "held signal" if r["held"] else "reserved",
                    ]
                    for r in data["reserved"]
                ],
                ["RESERVED WAIT", "WORKFLOW", "RUN", "STEP", "STATE"],
                wide=wide,
                drop=("RUN", "WORKFLOW"),
            )
            out("A signal sent to a reserved wait is held and applied when its step opens.")

    def _render_open(data: dict[str, Any]) -> None:
        if not data["waits"]:
            out("No open waits.")
            if not show_all and _expired_waits(ctx, payload, repo_dir):
                out("Some waits are past their deadline; see them with: swamp workflow waits --all")
            return
        table(
            [
                [
                    w["waitId"] + (" !" if w.get("hookFailed") else ""),
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
        if any(w.get("hookFailed") for w in data["waits"]):  # HOOK-017
            out("! its waitOpened hook failed, so nobody may have been told it is open")
            out("  (how it failed: swamp workflow wait show WAIT_ID)")
        if any(not w["expired"] for w in data["waits"]):
            out("Send one with: swamp workflow signal WAIT_ID --payload '<json>'")
            out("  (its schema and an example: swamp workflow wait show WAIT_ID)")
        if any(w["expired"] for w in data["waits"]):
            out("An expired wait takes no signal (wait_expired); resuming its run fails the step")
            out("  (wait_timeout): swamp workflow resume WORKFLOW --run RUN_ID")
        if "deadlineEnforced" in data:
            from .render import enforcement_lines

            enforcement_lines(data["deadlineEnforced"])

    payload: dict[str, Any] = _drop_none(
        {
            "workflow": workflow_name,
            "expiringWithin": expiring_within,
            "all": True if show_all else None,
            "reserved": True if reserved else None,
        }
    )
    call(ctx, "workflow.waits", payload, as_json=as_json, repo_dir=repo_dir, render=render)


def _expired_waits(ctx: click.Context, payload: dict[str, Any], repo_dir: str | None) -> bool:
    """Whether the same listing with --all would show expired waits (to say how to see them)."""
    from .common import _repo_dir
    from .transport import handler

    directory = _repo_dir(ctx, repo_dir)
    request = {**payload, "all": True, **({"repoDir": directory} if directory else {})}
    return any(w["expired"] for w in handler(ctx)("workflow.waits", request)["waits"])


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
    """Inspect one signal wait; grant and revoke signal permissions for it.

    \b
    Examples:
      swamp workflow wait show WAIT_ID
      swamp workflow wait grant WAIT_ID --expires 2h --uses 1
      swamp workflow wait revoke PERMISSION_ID
      swamp workflow wait link WAIT_ID --expires 1d
    """


@workflow_wait.command("show")
@click.argument("wait_id", metavar="[WAIT_ID]", required=False, shell_complete=wait_ids)
@wait_address_options
@output_options
@click.pass_context
def workflow_wait_show(
    ctx: click.Context,
    wait_id: str | None,
    run_id: str | None,
    step: str | None,
    job: str | None,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Show wait WAIT_ID whole: its schema and an example payload, or its receipt once settled.

    WAIT_ID may be a unique prefix of the ID; or name the wait by its run and step with --run and
    --step.

    \b
    Examples:
      swamp workflow wait show wait_3bq...
      swamp workflow wait show wait_3bqx
      swamp workflow wait show --run 3f2a --step review-eu
    """
    import json

    from .terminal_text import exact, shown, shown_doc

    @exact  # schema and payload are printed as JSON of the exact values, then shown (CLI-030)
    def render(exactly: dict[str, Any]) -> None:
        data = shown_doc(exactly)
        out(f"Wait {style(data['waitId'], bold=True)}: {data['status']}")
        out(
            f"  workflow {data['workflowName']}, run {data['runId']}, "
            f"step {data['jobName']}.{data['stepName']}"
        )
        if data.get("description"):
            out(f"  {data['description']}")
        if "openedAt" in data:
            out(f"  opened {data['openedAt']}, deadline {data['deadline']}")
            if "deadlineEnforced" in data:
                from .render import enforcement_lines

                enforcement_lines(data["deadlineEnforced"], "  ")
        elif data["status"] == "reserved":
            out(f"  reserved: step {data['stepName']} has not opened it yet ({data['stepStatus']})")
        else:
            out(f"  closed: step {data['stepName']} is {data['stepStatus']}, run {data['runStatus']}")
        out("  schema: " + shown(json.dumps(exactly["schema"], ensure_ascii=False)))
        if data.get("held"):
            held = data["held"]
            out(f"  holds early signal {held['signalId']} (held at {held['heldAt']}): applied at open")
        if data.get("heldRefused"):
            refused = data["heldRefused"]
            out(f"  early signal {refused['signalId']} refused at {refused['at']}: {refused['code']}")
        if data.get("receipt"):
            receipt = data["receipt"]
            from .render import who

            sender = who(receipt["submittedBy"], receipt)
            out(f"  received {receipt['id']} at {receipt['receivedAt']} from {sender}")
            out("  payload: " + shown(json.dumps(exactly.get("payload"), ensure_ascii=False)))
        if data.get("permissions"):
            out("  permissions:")
            for line in permission_lines(data["permissions"]):
                out("    " + line)
        if data.get("hookFailed"):  # HOOK-017
            failed = data["hookFailed"]
            again = f", next attempt at {failed['retryAt']}" if failed.get("retryAt") else ""
            out(
                "  " + style("! its waitOpened hook failed", "red", bold=True)
                + f" ({failed['code']}, attempt {failed['attempt']} of {failed['attempts']}{again}): "
                "nobody may have been told this wait is open"
            )
        if data.get("hooks"):
            from .render import hook_lines

            out("  hooks:")
            for entry in data["hooks"]:
                hook_lines(entry, indent="    ")
        for command in data.get("next", []):
            out(f"  Next: {command}")

    address = wait_address(wait_id, run_id, step, job)
    call(ctx, "workflow.wait.show", address, as_json=as_json, repo_dir=repo_dir, render=render)


def permission_lines(permissions: list[dict[str, Any]]) -> list[str]:
    """One line a permission: its ID, state, granter, expiry and uses left (never a token)."""
    lines = []
    for p in permissions:
        parts = [p["id"], p["state"], f"granted by {p['grantedBy']} at {p['grantedAt']}"]
        if p.get("expiresAt"):
            parts.append(f"expires {p['expiresAt']}")
        if p.get("uses") is not None:
            parts.append(f"{p.get('usesLeft', 0)} of {p['uses']} use(s) left")
        if p.get("revokedAt"):
            parts.append(f"revoked by {p.get('revokedBy', '?')} at {p['revokedAt']}")
        if p.get("usedBy"):
            parts.append(f"delivered {p['usedBy']}")
        if p.get("note"):
            parts.append(f"note: {p['note']}")
        lines.append(", ".join(parts))
    return lines


def override_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--override",
        metavar="REASON",
        help="An admin acting past the wait's answerer policy: why (recorded in the audit trail).",
    )(func)


@workflow_wait.command("grant")
@click.argument("wait_id", metavar="[WAIT_ID]", required=False, shell_complete=wait_ids)
@click.option(
    "--expires",
    type=DURATION,
    metavar="DURATION",
    help="The permission ends after DURATION (90s, 30m, 2h, 1d); by default when the wait settles.",
)
@click.option("--uses", type=click.IntRange(min=1), metavar="N", help="It delivers at most N signals.")
@click.option("--note", metavar="TEXT", help="Why it was granted (shown with it in wait show).")
@override_option
@wait_address_options
@claim_option
@output_options
@click.pass_context
def workflow_wait_grant(
    ctx: click.Context,
    wait_id: str | None,
    expires: float | None,
    uses: int | None,
    note: str | None,
    override: str | None,
    run_id: str | None,
    step: str | None,
    job: str | None,
    claim_timeout: float | None,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Grant a signal permission: a token that delivers to the open wait WAIT_ID and nothing more.

    The token is printed once, here; swamp keeps only its SHA-256. Whoever holds it may send
    `swamp workflow signal WAIT_ID --token-file FILE` on your behalf (the receipt names you and
    the permission). Only someone who may answer the wait (or an admin, with --override) may
    grant; the permission ends when the wait settles, when it expires, when its uses are spent,
    or with `swamp workflow wait revoke PERMISSION_ID`.

    \b
    Examples:
      swamp workflow wait grant wait_3bq... --expires 2h --uses 1 --note "scanner in CI"
      swamp workflow wait grant wait_3bqx --json | jq -r .permission.token > token.txt
    """
    within = _expires_seconds(expires)

    def render(data: dict[str, Any]) -> None:
        p = data["permission"]
        limits = [f"expires {p['expiresAt']}" if p.get("expiresAt") else "until the wait settles"]
        if p.get("uses") is not None:
            limits.append(f"{p['uses']} use(s)")
        out(f"{style('Permission granted', 'green')}: {p['id']} for wait {p['waitId']} ({', '.join(limits)})")
        out(f"  token: {p['token']}")
        out("  It is shown only now (swamp keeps its hash); give it to the sender, who delivers with:")
        for command in data.get("next", []):
            out(f"  {command}")

    payload = _drop_none(
        {
            **wait_address(wait_id, run_id, step, job),
            "expires": within,
            "uses": uses,
            "note": note,
            "override": override,
            "claimTimeout": claim_timeout,
        }
    )
    call(ctx, "workflow.wait.grant", payload, as_json=as_json, repo_dir=repo_dir, render=render)


def _expires_seconds(expires: float | None) -> float | None:
    """--expires DURATION (read by DURATION) within its bounds, or a usage error (ACCESS-044)."""
    if expires is None:
        return None
    from ..domain.permissions import MAX_EXPIRES

    if not 0 < expires <= MAX_EXPIRES:
        raise click.BadParameter(
            "give a duration longer than 0 and at most ten years, such as 30m", param_hint="--expires"
        )
    return expires


@workflow_wait.command("link")
@click.argument("wait_id", metavar="[WAIT_ID]", required=False, shell_complete=wait_ids)
@click.option(
    "--expires",
    type=DURATION,
    metavar="DURATION",
    help="The link ends after DURATION (90s, 30m, 2h, 1d); by default when the wait settles.",
)
@override_option
@wait_address_options
@claim_option
@output_options
@click.pass_context
def workflow_wait_link(
    ctx: click.Context,
    wait_id: str | None,
    expires: float | None,
    override: str | None,
    run_id: str | None,
    step: str | None,
    job: str | None,
    claim_timeout: float | None,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Make a one-time answer link for the open wait WAIT_ID: <gateway.publicUrl>/a/<token>.

    Whoever opens it answers the wait once, from a browser (a form made from the wait's schema)
    or a program (swamp gateway's JSON API), on your behalf, as with `wait grant --uses 1`. The
    link is printed once, here; it needs `gateway: {publicUrl: URL}` in .swamp.yaml and
    `swamp gateway` listening there.

    \b
    Examples:
      swamp workflow wait link wait_3bq... --expires 1d
      swamp workflow wait link --run 3f2a --step qa-verdict --json | jq -r .url
    """
    within = _expires_seconds(expires)

    def render(data: dict[str, Any]) -> None:
        p = data["permission"]
        limit = f"expires {p['expiresAt']}" if p.get("expiresAt") else "until the wait settles"
        out(f"{style('Link made', 'green')}: {p['id']} for wait {p['waitId']} (one use, {limit})")
        out(f"  {data['url']}")
        out("  It is shown only now (swamp keeps its token's hash); send it to whoever answers.")

    payload = _drop_none(
        {
            **wait_address(wait_id, run_id, step, job),
            "expires": within,
            "override": override,
            "claimTimeout": claim_timeout,
        }
    )
    call(ctx, "workflow.wait.link", payload, as_json=as_json, repo_dir=repo_dir, render=render)


@workflow_wait.command("revoke")
@click.argument("permission_id", metavar="PERMISSION_ID")
@override_option
@claim_option
@output_options
@click.pass_context
def workflow_wait_revoke(
    ctx: click.Context,
    permission_id: str,
    override: str | None,
    claim_timeout: float | None,
    as_json: bool,
    repo_dir: str | None,
) -> None:
    """Revoke signal permission PERMISSION_ID: its token delivers nothing from now on.

    Its granter may revoke it, and so may anyone who may answer its wait (an admin with
    --override). `swamp workflow wait show WAIT_ID` lists a wait's permissions.

    \b
    Example:
      swamp workflow wait revoke perm_7kq...
    """

    def render(data: dict[str, Any]) -> None:
        p = data["permission"]
        out(
            f"{style('Permission revoked', 'green')}: {p['id']} for wait {p['waitId']} "
            f"(granted by {p['grantedBy']}); its token delivers nothing now"
        )

    payload = _drop_none({"permissionId": permission_id, "override": override, "claimTimeout": claim_timeout})
    call(ctx, "workflow.wait.revoke", payload, as_json=as_json, repo_dir=repo_dir, render=render)
