"""Benchmark: wall time of one `swamp workflow signal` process (valid payload, a run with one wait),
beside `python -c pass` and `swamp --version` measured in the same run. Prints JSON."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

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
        waits = [open_wait(root, k) for k in range(args.repeats + 1)]
        spare = waits.pop()
        signal, floor, version = [], [], []
        for wait_id in waits:  # interleaved so that noise hits all three alike
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
        "targetMs": 200,
        "topImportsOfSignal": profile,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
