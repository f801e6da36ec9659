"""Benchmark: wall time of one `swamp workflow signal` process (valid payload, a run with one wait)
and of one `swamp workflow run` up to its suspension at that wait, beside `python -c pass` and
`swamp --version` measured in the same rounds (interleaved, so noise hits all alike). Prints JSON;
issue 25 aims for signal at most 4x and run at most 8x `python -c pass`."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from _common import SWAMP, env, make_repo, median_ms, remove, timed
from bench_all import fresh_bytecode, import_profile

WORKFLOW = """\
id: 00000000-0000-4000-8000-00000000000c
name: waiter
inputs:
  type: object
  properties:
    k: {type: integer}
jobs:
  - name: main
    steps:
      - name: review
        task:
          type: wait_for_signal
          timeout: 86400
          schema:
            type: object
            required: [verdict]
            additionalProperties: false
            properties:
              verdict: {type: string, enum: [ship, fix, abandon]}
"""


def open_wait(root, k: int) -> str:
    done = subprocess.run(
        [SWAMP, "workflow", "run", "waiter", "--input", f"k={k}", "--json"],
        cwd=root,
        capture_output=True,
        env=env(),
        check=True,
    )
    return json.loads(done.stdout)["waits"][0]["waitId"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    fresh_bytecode()
    root = make_repo({"workflows/workflow-waiter.yaml": WORKFLOW})
    try:
        signal, floor, version, run = [], [], [], []
        waits = []
        for k in range(args.repeats + 1):  # interleaved so that noise hits all four alike
            floor.append(timed([sys.executable, "-c", "pass"]))
            started = time.perf_counter()
            waits.append(open_wait(root, k))
            run.append(time.perf_counter() - started)
        spare = waits.pop()
        for wait_id in waits:
            floor.append(timed([sys.executable, "-c", "pass"]))
            version.append(timed([SWAMP, "--version"]))
            signal.append(
                timed([SWAMP, "workflow", "signal", wait_id, "--payload", '{"verdict":"ship"}'], cwd=root)
            )
        profile = import_profile(root, spare)
    finally:
        remove(root)
    report = {
        "benchmark": "signal",
        "repeats": args.repeats,
        "signalMedianMs": median_ms(signal),
        "pythonPassMedianMs": median_ms(floor),
        "swampVersionMedianMs": median_ms(version),
        "signalOverPythonPass": round(median_ms(signal) / median_ms(floor), 2),
        "runToSuspensionMedianMs": median_ms(run),
        "runOverPythonPass": round(median_ms(run) / median_ms(floor), 2),
        "targetMs": 200,
        "topImportsOfSignal": profile,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
