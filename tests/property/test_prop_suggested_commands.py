"""Every command swamp suggests is safe to paste (CLI-027, domain/suggested.py).

For arbitrary workflow, job and step names, wait and run IDs and payload texts (quotes,
`$(...)`, backquotes, `;`, line breaks, a leading `-`, any Unicode, no NUL), `sh -c` and `bash -c`
of every suggested command run exactly one command with exactly those values: `swamp` is replaced
by `printf '%s\\0'`, which prints the arguments the shell gave it, and those are read back the way
swamp's command line reads them (options with a value, flags, `--` ending the options). No file
is created. One script per shell holds every command of an example, so an example costs two
processes.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swamp.domain import suggested

SEP = "\x1e"  # between the commands' outputs; kept out of the values
FRAGMENTS = [
    "$(touch pwned)", "`touch pwned2`", "'", '"', "\\", "\n", "-", "--", "--run", "-x", ";", "&&", "|",
    "'\"'\"'", "#", "*", "~", " ", "$HOME", "é", "\U0001f600", "<json>", "{\"a\":\"b'c\"}", ">out",
]  # fmt: skip
TEXT = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00" + SEP)
PARTS = st.one_of(st.sampled_from(FRAGMENTS), st.text(TEXT, max_size=6))
VALUES = st.lists(PARTS, min_size=1, max_size=8).map("".join).filter(bool)
SHELLS = [s for s in ("dash", "bash") if shutil.which(s)] or ["sh"]
WITH_VALUE = {"--run", "--job", "--payload", "--from"}
FLAGS = {"--resume"}


def read_argv(argv: list[str]) -> tuple[list[str], dict[str, str], set[str]]:
    """(values, options, flags) as swamp's command line reads argv after `swamp`."""
    values: list[str] = []
    options: dict[str, str] = {}
    flags: set[str] = set()
    rest = iter(argv)
    for word in rest:
        if word == "--":
            values.extend(rest)
            break
        if word in WITH_VALUE:
            options[word] = next(rest)
        elif word in FLAGS:
            flags.add(word)
        else:
            assert not word.startswith("-"), f"{word!r} would be read as an option: {argv}"
            values.append(word)
    return values, options, flags


@settings(deadline=None)
@given(
    workflow=VALUES, step=VALUES, job=VALUES, wait_id=VALUES, run_id=VALUES, payload=VALUES,
    resume=st.booleans(),
)  # fmt: skip
def test_every_suggested_command_runs_exactly_what_it_says(
    tmp_path_factory: pytest.TempPathFactory,
    workflow: str, step: str, job: str, wait_id: str, run_id: str, payload: str, resume: bool,
) -> None:  # fmt: skip
    cases = [
        (suggested.signal(wait_id, payload, resume=resume),
         (["workflow", "signal", wait_id], {"--payload": payload}, {"--resume"} if resume else set())),
        (suggested.approve(workflow, step, run_id, job=job, resume=resume),
         (["workflow", "approve", workflow, step], {"--run": run_id, "--job": job},
          {"--resume"} if resume else set())),
        (suggested.approve(workflow, step),
         (["workflow", "approve", workflow, step], {}, set())),
        (suggested.reject(workflow, step, run_id),
         (["workflow", "reject", workflow, step], {"--run": run_id}, set())),
        (suggested.resume(workflow, run_id, from_step=step),
         (["workflow", "resume", workflow], {"--run": run_id, "--from": step}, set())),
        (suggested.cancel(workflow, run_id), (["workflow", "cancel", workflow], {"--run": run_id}, set())),
        (suggested.wait_show(wait_id), (["workflow", "wait", "show", wait_id], {}, set())),
        (suggested.watch(run_id), (["workflow", "watch", run_id], {}, set())),
    ]  # fmt: skip
    script = ""
    for command, _ in cases:
        assert command.startswith("swamp ")
        script += "printf '%s\\0'" + command[len("swamp") :] + f"\nprintf '{SEP}'\n"
    workdir = tmp_path_factory.mktemp("paste")
    for shell in SHELLS:
        done = subprocess.run(
            [shell, "-c", script], cwd=workdir, capture_output=True, timeout=30, env={"PATH": "/usr/bin:/bin"}
        )
        assert done.returncode == 0 and not done.stderr, (shell, done.stderr)
        outputs = done.stdout.decode("utf-8", "surrogateescape").split(SEP)[:-1]
        assert len(outputs) == len(cases), (shell, outputs)
        for output, (command, expected) in zip(outputs, cases, strict=True):
            argv = output.split("\0")[:-1]
            assert read_argv(argv) == expected, (shell, command, argv)
        assert list(workdir.iterdir()) == [], f"{shell} created {list(workdir.iterdir())}"
