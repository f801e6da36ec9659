"""Benchmark: wall time of one Tab, as bash's completion script runs it (`swamp` with click's
_SWAMP_COMPLETE protocol), completing a wait ID with --waits open waits (1,000 by default) and a
run ID (`signal --run`), beside `python -c pass` and `swamp --version` measured in the same rounds
(interleaved, so noise hits all alike); and the first Tab after the open index is lost (answered
the slow way, through click and the records, which rebuilds the index). `--load N` runs N busy
processes meanwhile (the "under load" figure). Prints JSON; issue 30 aims for a wait-ID Tab under
50 ms on an idle machine and no worse than 3x that under load."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import uuid
from pathlib import Path

from _common import SWAMP, env, make_repo, median_ms, remove, timed
from bench_all import fresh_bytecode

WORKFLOW = """\
id: 00000000-0000-4000-8000-00000000000d
name: waiter
jobs:
  - name: main
    steps:
      - name: review
        task:
          type: wait_for_signal
          timeout: 864000
          description: QA says ship or fix
          schema: {type: string}
"""


def open_waits(root: Path, count: int) -> None:
    """One run through the command line, then `count - 1` copies of it saved through the store (a
    new run ID and wait ID each), as `workflow run` would save them."""
    done = subprocess.run(
        [SWAMP, "workflow", "run", "waiter", "--json"], cwd=root, capture_output=True, env=env(), check=True
    )
    first = json.loads(done.stdout)
    from swamp.domain.run import WorkflowRun
    from swamp.store.repo import RepoLayout
    from swamp.store.runs import RunRepository

    runs = RunRepository(RepoLayout(root))
    text = runs.path_for(first["workflowId"], first["id"]).read_text()
    wait_id = first["waits"][0]["waitId"]
    for k in range(count - 1):
        copy = text.replace(first["id"], str(uuid.uuid4())).replace(wait_id, f"wait_{k:026d}")
        runs.save(WorkflowRun.from_dict(json.loads(copy), "bench"))


def tab(root: Path, line: str) -> tuple[float, int]:
    words = line.split(" ")
    argv = [SWAMP]
    extra = {"_SWAMP_COMPLETE": "bash_complete", "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)}
    started = _now()
    done = subprocess.run(argv, cwd=root, capture_output=True, env={**env(), **extra})
    took = _now() - started
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"Tab on {line!r} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return took, len(done.stdout.splitlines())


def _now() -> float:
    import time

    return time.perf_counter()


def p95_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 1)


def _burn() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--waits", type=int, default=1000)
    parser.add_argument("--load", type=int, default=0, metavar="N", help="busy processes meanwhile")
    args = parser.parse_args()
    fresh_bytecode()
    root = make_repo({"workflows/workflow-waiter.yaml": WORKFLOW})
    burners: list[multiprocessing.Process] = []
    try:
        open_waits(root, args.waits)
        index = root / ".swamp" / "index" / "open.log"
        floor, version, waits, runs, slow = [], [], [], [], []
        offered = {}
        for _ in range(args.load):
            burners.append(multiprocessing.Process(target=_burn, daemon=True))
            burners[-1].start()
        for k in range(args.repeats):
            floor.append(timed([sys.executable, "-c", "pass"]))
            version.append(timed([SWAMP, "--version"]))
            took, offered["waitIds"] = tab(root, "swamp workflow signal ")
            waits.append(took)
            took, offered["runIds"] = tab(root, "swamp workflow signal --run ")
            runs.append(took)
            if k < 3:  # the slow way costs seconds at 1,000 waits: a few samples
                os.unlink(index)
                took, offered["slowWaitIds"] = tab(root, "swamp workflow signal ")
                slow.append(took)
    finally:
        for burner in burners:
            burner.terminate()
        remove(root)
    if offered["waitIds"] != args.waits or offered["slowWaitIds"] != args.waits:
        raise SystemExit(f"expected {args.waits} wait IDs offered, got {offered}")
    base = statistics.median(floor)
    report = {
        "benchmark": "complete",
        "repeats": args.repeats,
        "openWaits": args.waits,
        "load": args.load,
        "pythonPassMedianMs": median_ms(floor),
        "pythonPassP95Ms": p95_ms(floor),
        "swampVersionMedianMs": median_ms(version),
        "swampVersionP95Ms": p95_ms(version),
        "waitIdTabMedianMs": median_ms(waits),
        "waitIdTabP95Ms": p95_ms(waits),
        "runIdTabMedianMs": median_ms(runs),
        "runIdTabP95Ms": p95_ms(runs),
        "slowPathWaitIdTabMedianMs": median_ms(slow),
        "versionOverPythonPass": round(statistics.median(version) / base, 2),
        "waitIdTabOverPythonPass": round(statistics.median(waits) / base, 2),
        "runIdTabOverPythonPass": round(statistics.median(runs) / base, 2),
        "offered": offered,
        "targetMs": 50,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
