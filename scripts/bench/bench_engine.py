"""Benchmark: a forEach workflow of N no-op Python method steps, run through the CLI.

Prints JSON: median wall time per size (3 runs each), the 2N/N ratio, per-step overhead."""

from __future__ import annotations

import argparse
import json

from _common import SWAMP, make_repo, median_ms, remove, timed

WORKFLOW = """\
id: 00000000-0000-4000-8000-00000000000b
name: bench
inputs:
  type: object
  properties:
    n: {type: integer}
jobs:
  - name: main
    steps:
      - name: item-${{ self.i }}
        forEach: {item: i, in: "${{ inputs.n > 0 ? [0].map(x, x) : [] }}"}
        task: {type: model_method, modelIdOrName: noop, methodName: run}
"""


def workflow(n: int) -> str:
    items = json.dumps(list(range(n)))
    return WORKFLOW.replace('"${{ inputs.n > 0 ? [0].map(x, x) : [] }}"', f'"${{{{ {items} }}}}"')


def measure(n: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        root = make_repo({"workflows/workflow-bench.yaml": workflow(n)})
        try:
            samples.append(timed([SWAMP, "workflow", "run", "bench", "--json"], cwd=root))
        finally:
            remove(root)
    return median_ms(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,2000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {str(n): measure(n, args.repeats) for n in sizes}
    report: dict[str, object] = {"benchmark": "engine", "medianMs": results, "repeats": args.repeats}
    if len(sizes) >= 2:
        small, big = sizes[0], sizes[-1]
        report["ratio"] = round(results[str(big)] / results[str(small)], 3)
        report["perStepUs"] = round((results[str(big)] - results[str(small)]) * 1000 / (big - small), 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
