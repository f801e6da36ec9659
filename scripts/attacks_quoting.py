"""Attacks on issue 13's first item: payloads are data in every shell quoting context.

For each context of a command/shell `run` (unquoted, next to other characters, "...", '...',
$'...', a here-document, $(...), a comment) a workflow waits for a signal, and the payload — full
of `$(touch ...)`, backquotes, quotes and a line that ends the here-document — is signalled and the
run resumed. Held: no marker file exists and the step printed exactly the payload. Then the
contexts swamp must refuse (backticks, shell arithmetic, a quoted here-document): held when
`workflow validate` fails its `Shell arguments` check and `workflow run` refuses with
`workflow_invalid`, creating nothing.

Self-contained (standard library only), against a real swamp binary:
`run(swamp, workdir) -> [{"attack", "held", "detail"}]`, whole module well under 60 s.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import time
from typing import Any

NOW = "2026-01-01T00:00:00Z"
X = "${{ steps.value.outputs.payload.x }}"
MODEL = """id: 00000000-0000-4000-8000-0000000000a1
name: sh
type: command/shell
methods:
  execute:
    arguments: {run: "true"}
"""
# (name, run template, what it prints for the payload p)
CONTEXTS: list[tuple[str, str, Any]] = [
    ("unquoted", f"printf '%s|' {X}", lambda p: p + "|"),
    ("next-to-other-characters", f"printf '%s|' a{X}b", lambda p: f"a{p}b|"),
    ("double-quotes", f"printf '%s|' \"got {X}\"", lambda p: f"got {p}|"),
    ("single-quotes", f"printf '%s|' 'got {X}'", lambda p: f"got {p}|"),
    ("dollar-single-quotes", f"printf '%s|' $'got {X}'", None),  # dash has no $'...': contains p
    ("here-document", f"cat <<EOF\n{X}\nEOF", lambda p: p + "\n"),
    ("command-substitution", f"printf '%s|' \"$(printf '%s' {X})\"", lambda p: p.rstrip("\n") + "|"),
    ("comment", f"printf '%s|' ok # {X}", lambda p: "ok|"),
]
REFUSED = [
    ("backticks", f"echo `echo {X}`"),
    ("arithmetic", f"echo $(( {X} + 1 ))"),
    ("bash-arithmetic-test", f"[[ {X} -eq 1 ]]"),
    ("quoted-here-document", f"cat <<'EOF'\n{X}\nEOF"),
]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWAMP_")}
    env["SWAMP_NOW"] = NOW
    return env


def _swamp(swamp: str, repo: pathlib.Path, *args: str) -> tuple[int, Any, str]:
    done = subprocess.run(
        [swamp, *args],
        cwd=repo,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    try:
        doc = json.loads(done.stdout) if "--json" in args else done.stdout
    except ValueError:
        doc = None
    return done.returncode, doc, done.stderr


def _workflow(name: str, run: str, index: int) -> str:
    doc = {
        "id": f"a77ac000-0000-4000-8000-{index:012d}",
        "name": name,
        "jobs": [
            {
                "name": "main",
                "steps": [
                    {"name": "value", "task": {"type": "wait_for_signal", "timeout": 600}},
                    {
                        "name": "use",
                        "dependsOn": [{"step": "value", "condition": {"type": "succeeded"}}],
                        "task": {
                            "type": "model_method",
                            "modelIdOrName": "sh",
                            "methodName": "execute",
                            "inputs": {"run": run},
                        },
                    },
                ],
            }
        ],
    }
    return json.dumps(doc)  # JSON is YAML


def _payload(marker: pathlib.Path) -> str:
    m = str(marker)
    return (
        f"it's $(touch {m}) `touch {m}` '$(touch {m})' \"$(touch {m})\" ; touch {m} \\ $HOME"
        f"\nEOF\ntouch {m}\n'; touch {m}; '"
    )


def _context_attack(
    swamp: str, repo: pathlib.Path, index: int, name: str, run: str, want: Any
) -> dict[str, Any]:
    started = time.monotonic()
    workflow = f"q-{name}"
    marker = repo.parent / f"pwned-{name}"
    (repo / "workflows" / f"workflow-{workflow}.yaml").write_text(_workflow(workflow, run, index))
    attack = f"payload-in-{name}"
    code, doc, err = _swamp(swamp, repo, "workflow", "run", workflow, "--json")
    try:
        wait_id = doc["waits"][0]["waitId"]
    except (TypeError, KeyError, IndexError):
        return {"attack": attack, "held": False, "detail": f"run did not suspend: exit {code} {err[-200:]}"}
    payload = _payload(marker)
    code, _, err = _swamp(
        swamp, repo, "workflow", "signal", wait_id, "--payload", json.dumps({"x": payload}), "--json"
    )
    if code != 0:
        return {"attack": attack, "held": False, "detail": f"signal refused: exit {code} {err[-200:]}"}
    code, doc, err = _swamp(swamp, repo, "workflow", "resume", workflow, "--json")
    seconds = time.monotonic() - started
    if marker.exists():
        return {"attack": attack, "held": False, "detail": f"the payload ran: {marker.name} exists"}
    try:
        step = next(s for j in doc["jobs"] for s in j["steps"] if s["name"] == "use")
        stdout = step["outputs"]["stdout"]
    except (TypeError, KeyError, StopIteration):
        return {"attack": attack, "held": False, "detail": f"no output: exit {code} {err[-200:]}"}
    exact = payload in stdout if want is None else stdout == want(payload)
    detail = f"{'exact' if exact else 'NOT exact: ' + repr(stdout[:80])}, no file, {seconds:.1f} s"
    return {"attack": attack, "held": exact, "detail": detail}


def _refusal_attack(swamp: str, repo: pathlib.Path, index: int, name: str, run: str) -> dict[str, Any]:
    workflow = f"r-{name}"
    marker = repo.parent / f"pwned-{name}"
    run = run.replace(X, "${{ inputs.x }}")
    doc = json.loads(_workflow(workflow, run, index))
    doc["inputs"] = {
        "type": "object",
        "properties": {"x": {"type": "string", "default": f"a[$(touch {marker})]"}},
    }
    doc["jobs"][0]["steps"] = doc["jobs"][0]["steps"][1:]
    doc["jobs"][0]["steps"][0].pop("dependsOn")
    (repo / "workflows" / f"workflow-{workflow}.yaml").write_text(json.dumps(doc))
    attack = f"refused-{name}"
    code, result, _ = _swamp(swamp, repo, "workflow", "validate", workflow, "--json")
    checks = {c["name"]: c for c in (result or {}).get("validations", [])}
    shell = checks.get("Shell arguments", {})
    code_run, refused, _ = _swamp(swamp, repo, "workflow", "run", workflow, "--json")
    refused_code = ((refused or {}).get("error") or {}).get("code")
    held = (
        code == 1
        and shell.get("passed") is False
        and refused_code == "workflow_invalid"
        and not marker.exists()
    )
    detail = (
        f"validate exit {code}: {str(shell.get('error', 'no Shell arguments check'))[:90]}; "
        f"run exit {code_run} {refused_code}; marker {'exists' if marker.exists() else 'absent'}"
    )
    return {"attack": attack, "held": held, "detail": detail}


def run(swamp: str, workdir: pathlib.Path) -> list[dict[str, Any]]:
    repo = pathlib.Path(workdir) / "quoting-repo"
    repo.mkdir(parents=True, exist_ok=True)
    code, _, err = _swamp(swamp, repo, "repo", "init", ".")
    if code != 0:
        return [{"attack": "setup", "held": False, "detail": f"repo init failed: {err[-200:]}"}]
    (repo / "models" / "command" / "shell").mkdir(parents=True, exist_ok=True)
    (repo / "models" / "command" / "shell" / "sh.yaml").write_text(MODEL)
    results = [
        _context_attack(swamp, repo, i, name, template, want)
        for i, (name, template, want) in enumerate(CONTEXTS)
    ]
    results += [
        _refusal_attack(swamp, repo, 100 + i, name, template) for i, (name, template) in enumerate(REFUSED)
    ]
    return results


if __name__ == "__main__":  # python scripts/attacks_quoting.py SWAMP [WORKDIR]
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        base = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else pathlib.Path(scratch)
        for result in run(sys.argv[1], base):
            print(json.dumps(result))
