"""Attacks on issue 26's first item: a suggested command runs code when pasted.

A workflow file is written by someone other than whoever pastes `next` (or a bot running
`sh -c "$next"`). Its wait schema's `enum` or `default` gives the example payload, its step names
go into the approve and reject commands. Each attack runs a workflow up to its suspension, then
every `next` command of the run document under `sh -c`, with `swamp` on PATH being the real
binary. Held: no marker file exists, and the signal command delivered exactly the example payload
(the wait took it), or the approval command decided the step it names.

Self-contained (standard library only), against a real swamp binary:
`run(swamp, workdir) -> [{"attack", "held", "detail"}]`, well under 30 s.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from typing import Any

NOW = "2026-01-01T00:00:00Z"
WORKFLOW = """id: 5a000000-0000-4000-8000-0000000026{n:02d}
name: {name}
jobs:
  - name: main
    steps:
      - name: {step}
        task: {task}
"""
ATTACKS: list[tuple[str, str, str]] = [
    # (attack, step name as YAML, task as YAML flow)
    ("enum-ends-the-quotes", "verdict",
     '{type: wait_for_signal, timeout: 600, schema: {type: string, enum: ["x\' ; touch pwned ; echo \'"]}}'),
    ("default-with-a-quote", "verdict",
     '{type: wait_for_signal, timeout: 600, schema: {type: string, default: "don\'t"}}'),
    ("object-member-with-a-quote", "verdict",
     '{type: wait_for_signal, timeout: 600, schema: {type: object, required: [a], '
     'properties: {a: {const: "$(touch pwned)\' `touch pwned`"}}}}'),
    ("step-name-ends-the-quotes", "\"x' ; touch pwned ; echo '\"", '{type: manual_approval, prompt: "Go?"}'),
    ("step-name-is-an-option", '"--run"', '{type: manual_approval, prompt: "Go?"}'),
]  # fmt: skip


def _swamp(swamp: str, repo: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SWAMP_NOW": NOW, "NO_COLOR": "1"}
    return subprocess.run([swamp, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60)


def run(swamp: str, workdir: pathlib.Path) -> list[dict[str, Any]]:
    results = []
    bindir = workdir / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    link = bindir / "swamp"
    if not link.exists():
        link.symlink_to(swamp)
    for n, (attack, step, task) in enumerate(ATTACKS):
        repo = workdir / attack
        repo.mkdir(parents=True, exist_ok=True)
        _swamp(swamp, repo, "repo", "init", ".")
        name = f"paste{n}"
        (repo / "workflows" / f"workflow-{name}.yaml").write_text(
            WORKFLOW.format(n=n, name=name, step=step, task=task), encoding="utf-8"
        )
        started = _swamp(swamp, repo, "workflow", "run", name, "--json")
        try:
            doc = json.loads(started.stdout)
            commands = doc["next"][:-1]  # the last is resume
        except (ValueError, KeyError) as exc:
            detail = f"no run document: {exc}: {started.stdout[-300:]}"
            results.append({"attack": attack, "held": False, "detail": detail})
            continue
        env = {**os.environ, "SWAMP_NOW": NOW, "PATH": f"{bindir}:{os.environ.get('PATH', '')}"}
        wait_id = doc["waits"][0]["waitId"] if doc.get("waits") else None
        if wait_id:
            shown = json.loads(_swamp(swamp, repo, "workflow", "wait", "show", wait_id, "--json").stdout)
            example = shown.get("examplePayload")
        first = commands[0]
        pasted = subprocess.run(["sh", "-c", first], cwd=repo, env=env, capture_output=True, text=True,
                                timeout=60)  # fmt: skip
        planted = [p.name for p in repo.rglob("pwned*")]
        if wait_id:
            after = json.loads(_swamp(swamp, repo, "workflow", "wait", "show", wait_id, "--json").stdout)
            delivered = pasted.returncode == 0 and after.get("payload") == example and example is not None
        else:
            got = _swamp(swamp, repo, "workflow", "history", "get", doc["id"], "--json")
            run_doc = json.loads(got.stdout)
            decided = run_doc["jobs"][0]["steps"][0]
            delivered = pasted.returncode == 0 and decided.get("status") != "waiting_approval"
        held = not planted and delivered
        detail = "pasted next ran only swamp, with the values it names" if held else (
            f"planted files {planted}" if planted else f"pasted {first!r}: exit {pasted.returncode}, "
            f"{(pasted.stdout + pasted.stderr)[-300:]!r}"
        )
        results.append({"attack": attack, "held": held, "detail": detail})
    return results
