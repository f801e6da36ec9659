"""Attacks on issue 26's item 3 and the first half of item 11: nothing from a run reaches a
terminal raw (CLI-030), and an `--input` that is not UTF-8 is a usage error (INPUT-012).

A workflow whose names, step output, stderr and wait description (rendered from an `--input`)
carry a clipboard write (`ESC ] 52`), a window title (`ESC ] 0`), a screen clear, a cursor move,
a C1 CSI and DEL is run, resumed, listed, shown, watched and followed through `swamp events`; a
line is planted in the run's journal while `watch` follows it; colour is forced so that only
swamp's own colour may pass. Held: log mode wrote none of those characters raw (each shows as a
visible escape such as `\\x1b`), and `--json` still carries the exact text. Then `--input` bytes
that are not UTF-8: held when refused with `usage_error`, exit 2, not `internal_error`.

Self-contained (standard library only), against a real swamp binary:
`run(swamp, workdir) -> [{"attack", "held", "detail"}]`, whole module well under 60 s.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
from typing import Any

NOW = "2026-01-01T00:00:00Z"
OSC52 = "\x1b]52;c;aGk=\x07"
TITLE = "\x1b]0;owned\x07"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # never from a run, on a pipe without colour
SGR_FROM_RUN = re.compile("\x1b\\[(?:31|8|5)m(?:RED|HIDDEN|x)")  # colour/hide/blink a run asked for
MODEL = """id: 00000000-0000-4000-8000-0000000000c1
name: sh
type: command/shell
methods:
  execute:
    arguments: {run: "true"}
"""
NOISY = """id: c0c0c000-0000-4000-8000-000000000001
name: "noisy\\e]0;owned\\a"
jobs:
  - name: "build\\e[2J"
    steps:
      - name: "make\\e[H"
        task:
          type: model_method
          modelIdOrName: sh
          methodName: execute
          inputs:
            run: "printf 'out \\\\033]52;c;aGk=\\\\007 \\\\302\\\\233H \\\\033[31mRED\\\\n';
              printf 'err \\\\033[2J\\\\177 \\\\033[8mHIDDEN\\\\n' >&2; exit 3"
"""
ASKS = """id: c0c0c000-0000-4000-8000-000000000002
name: asks
inputs:
  properties:
    note: {type: string}
jobs:
  - name: "main\\e[5mx"
    steps:
      - name: review
        task:
          type: wait_for_signal
          timeout: 600
          description: "About ${{ inputs.note }}"
          schema: {type: boolean}
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWAMP_") and k != "FORCE_COLOR"}
    env.update({"SWAMP_NOW": NOW, "NO_COLOR": "1", **extra})
    return env


def _swamp(swamp: str, repo: pathlib.Path, *args: str | bytes, **env: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [swamp, *args], cwd=repo, env=_env(**env), capture_output=True, timeout=30, stdin=subprocess.DEVNULL
    )
    return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")


def _clean(
    attack: str, outputs: list[tuple[str, int, str, str]], pattern: re.Pattern[str] = RAW
) -> dict[str, Any]:
    """Held when no command's stdout or stderr holds a match of `pattern`."""
    dirty = [
        f"{what} (exit {code}): {stream[max(0, m.start() - 20) : m.end() + 10]!r}"
        for what, code, out, err in outputs
        for stream in (out, err)
        for m in [pattern.search(stream)]
        if m
    ]
    codes = ", ".join(f"{what} exit {code}" for what, code, _, _ in outputs)
    return {
        "attack": attack,
        "held": not dirty,
        "detail": ("raw: " + "; ".join(dirty))[:300] if dirty else codes,
    }


def _run_and_resume(swamp: str, repo: pathlib.Path) -> dict[str, Any]:
    name = "noisy" + TITLE
    ran = _swamp(swamp, repo, "workflow", "run", name)
    code, doc, _ = _swamp(swamp, repo, "workflow", "run", name, "--json")
    run_id = json.loads(doc).get("id", "") if doc.startswith("{") else ""
    resumed = _swamp(swamp, repo, "workflow", "resume", name, "--run", run_id, "--from", "make\x1b[H")
    history = _swamp(swamp, repo, "workflow", "history", "get", run_id)
    watched = _swamp(swamp, repo, "workflow", "watch", run_id, "--timeout", "0")
    return _clean(
        "step-output-and-names-in-run-resume-history-watch",
        [("run", *ran), ("resume", *resumed), ("history get", *history), ("watch", *watched)]
        + [
            ("list", *_swamp(swamp, repo, "workflow", "list")),
            ("history", *_swamp(swamp, repo, "workflow", "history")),
        ],
    )


def _wait_from_input(swamp: str, repo: pathlib.Path) -> dict[str, Any]:
    ran = _swamp(swamp, repo, "workflow", "run", "asks", "--input", "note=" + OSC52 + "\x1b[2J")
    _, doc, _ = _swamp(swamp, repo, "workflow", "run", "asks", "--input", "note=" + TITLE, "--json")
    data = json.loads(doc) if doc.startswith("{") else {}
    wait = (data.get("waits") or [{}])[0]
    exact = wait.get("description") == "About " + TITLE
    outputs = [
        ("run", *ran),
        ("wait show", *_swamp(swamp, repo, "workflow", "wait", "show", wait.get("waitId", "none"))),
        ("waits", *_swamp(swamp, repo, "workflow", "waits")),
        ("events", *_swamp(swamp, repo, "events", "--timeout", "0")),
        (
            "signal",
            *_swamp(swamp, repo, "workflow", "signal", wait.get("waitId", "none"), "--payload", "true"),
        ),
    ]
    result = _clean("wait-description-from-input-in-wait-show-waits-events-signal", outputs)
    if not exact:
        result.update(held=False, detail=f"--json lost the exact description: {wait.get('description')!r}")
    return result


def _journal_under_watch(swamp: str, repo: pathlib.Path) -> dict[str, Any]:
    code, doc, err = _swamp(swamp, repo, "workflow", "run", "asks", "--input", "note=x", "--json")
    data = json.loads(doc) if doc.startswith("{") else {}
    if code != 0 or not data.get("waits"):
        return {"attack": "journal-line-planted-under-watch", "held": False, "detail": f"setup: {err[-200:]}"}
    journal = repo / ".swamp" / "journal" / f"{data['id']}.jsonl"
    last = json.loads(journal.read_text(encoding="utf-8").splitlines()[-1])["seq"]
    watch = subprocess.Popen(
        [swamp, "workflow", "watch", data["id"], "--timeout", "30"],
        cwd=repo,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert watch.stdout is not None
        first = watch.stdout.readline()  # its journal reader has started
        planted = {"event": "step_output", "job": TITLE, "step": "s", "stream": "stdout", "line": OSC52}
        with journal.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"seq": last + 1, "event": planted}) + "\n")
        _swamp(swamp, repo, "workflow", "signal", data["waits"][0]["waitId"], "--payload", "true", "--resume")
        rest, errors = watch.communicate(timeout=30)
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    out = (first + rest).decode("utf-8", "replace")
    result = _clean("journal-line-planted-under-watch", [("watch", watch.returncode, out, errors.decode())])
    if result["held"] and "\\x1b]52;c;aGk=\\x07" not in out:
        result.update(held=False, detail="the planted line was not shown at all (cannot tell): " + out[-200:])
    return result


def _colour_forced(swamp: str, repo: pathlib.Path) -> dict[str, Any]:
    colour = {"FORCE_COLOR": "1", "NO_COLOR": ""}
    name = "noisy" + TITLE
    outputs = [
        ("run", *_swamp(swamp, repo, "workflow", "run", name, **colour)),
        ("list", *_swamp(swamp, repo, "workflow", "list", **colour)),
        ("run asks", *_swamp(swamp, repo, "workflow", "run", "asks", "--input", "note=\x1b[5mx", **colour)),
    ]
    result = _clean("colour-forced-lets-only-swamps-own-colour-through", outputs, SGR_FROM_RUN)
    if result["held"] and "\x1b[" not in outputs[0][2]:
        result.update(held=False, detail="no colour at all with FORCE_COLOR (cannot tell)")
    return result


def _input_not_utf8(swamp: str, repo: pathlib.Path) -> list[dict[str, Any]]:
    results = []
    for label, value in [
        ("key=value", b"note=a\xffb"),
        ("json-object", b'{"note": "\xff"}'),
        ("key", b"n\xffote=1"),
    ]:
        code, out, err = _swamp(
            swamp, repo, "workflow", "run", "asks", "--input", "note=x", "--input", value, "--json"
        )
        try:
            error = json.loads(out)["error"]
        except (ValueError, KeyError, TypeError):
            error = {}
        held = code == 2 and error.get("code") == "usage_error" and "UTF-8" in error.get("message", "")
        results.append(
            {
                "attack": f"input-not-utf8-{label}",
                "held": held,
                "detail": f"exit {code} {error.get('code')}: {str(error.get('message'))[:140]}",
            }
        )
    return results


def run(swamp: str, workdir: pathlib.Path) -> list[dict[str, Any]]:
    repo = pathlib.Path(workdir) / "terminal-repo"
    repo.mkdir(parents=True, exist_ok=True)
    code, _, err = _swamp(swamp, repo, "repo", "init", ".")
    if code != 0:
        return [{"attack": "setup", "held": False, "detail": f"repo init failed: {err[-200:]}"}]
    (repo / "models" / "command" / "shell").mkdir(parents=True, exist_ok=True)
    (repo / "models" / "command" / "shell" / "sh.yaml").write_text(MODEL)
    (repo / "workflows" / "workflow-noisy.yaml").write_text(NOISY)
    (repo / "workflows" / "workflow-asks.yaml").write_text(ASKS)
    return [
        _run_and_resume(swamp, repo),
        _wait_from_input(swamp, repo),
        _journal_under_watch(swamp, repo),
        _colour_forced(swamp, repo),
        *_input_not_utf8(swamp, repo),
    ]


if __name__ == "__main__":  # python scripts/attacks_terminal.py SWAMP [WORKDIR]
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        base = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else pathlib.Path(scratch)
        for result in run(sys.argv[1], base):
            print(json.dumps(result))
