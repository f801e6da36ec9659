"""The commands swamp suggests: every `next`, the log's "Next:" and "Or answer and continue" lines,
`wait show`, the hooks document's `signal`, and the commands inside error messages.

Why one place: a suggested command is pasted into a shell, or run by a bot as `sh -c "$next"`, and
what it carries (an example payload built from a workflow's schema, a workflow, job or step name)
comes from files that someone else may write. Every value placed in a command is quoted here
(CLI-027), so the command runs exactly that swamp command with those values as its arguments, and
nothing else. A value made only of characters no shell treats specially stays bare, so the usual
commands read as before: `swamp workflow signal <id> --payload '{"verdict":"ship"}'`.
"""

from __future__ import annotations

import re

_BARE = re.compile(r"[A-Za-z0-9@%+=:,./_-]+\Z")


def quote(value: str, *, always: bool = False) -> str:
    """`value` as one POSIX shell word: bare when it has only the characters of `_BARE` (and is not
    empty), else (or `always`) inside single quotes with each `'` written `'"'"'` (CLI-027)."""
    if _BARE.match(value) and not always:
        return value
    return "'" + value.replace("'", "'\"'\"'") + "'"


class _Payload(str):
    """A word that is always quoted: a payload reads the same whether or not it needs it."""


def command(verb: list[str], values: list[str], options: list[str] | None = None) -> str:
    """`swamp VERB... VALUE... OPTION...`, each word quoted. When a value begins with `-` (a step
    named `--run x`, say) it would be read as an option: the options come first, then `--`, then the
    values (CLI-027)."""
    options = options or []
    if any(value.startswith("-") for value in values):
        words = [*verb, *options, "--", *values]
    else:
        words = [*verb, *values, *options]
    return " ".join(["swamp", *(quote(word, always=isinstance(word, _Payload)) for word in words)])


def signal(wait_id: str, payload: str, *, resume: bool = False) -> str:
    """`swamp workflow signal <waitId> --payload <payload>`: `payload` is the example's compact JSON
    or a placeholder (`<json>`, WAIT-014)."""
    options = ["--payload", _Payload(payload), *_flag(resume, "--resume")]
    return command(["workflow", "signal"], [wait_id], options)


def approve(
    workflow: str, step: str, run_id: str | None = None, *, job: str | None = None, resume: bool = False
) -> str:
    options = [*_run(run_id), *(["--job", job] if job else []), *_flag(resume, "--resume")]
    return command(["workflow", "approve"], [workflow, step], options)


def reject(workflow: str, step: str, run_id: str | None = None) -> str:
    return command(["workflow", "reject"], [workflow, step], _run(run_id))


def resume(workflow: str, run_id: str | None = None, *, from_step: str | None = None) -> str:
    options = [*_run(run_id), *(["--from", from_step] if from_step else [])]
    return command(["workflow", "resume"], [workflow], options)


def cancel(workflow: str, run_id: str) -> str:
    return command(["workflow", "cancel"], [workflow], _run(run_id))


def wait_show(wait_id: str) -> str:
    return command(["workflow", "wait", "show"], [wait_id])


def watch(run_id: str) -> str:
    return command(["workflow", "watch"], [run_id])


def _run(run_id: str | None) -> list[str]:
    return ["--run", run_id] if run_id else []


def _flag(on: bool, flag: str) -> list[str]:
    return [flag] if on else []
