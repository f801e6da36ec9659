"""scripts/reliability: the long versions of the reliability tests, with one JSON summary.

Runs, each many times over (real swamp processes, throw-away repositories on tmpfs when there is
one): concurrent signals to one wait, to the many waits of a forEach, signals racing resume, cancel
and reject, runs started at once in a fresh repository, SIGKILL of signal / resume / run at random
moments, a `swamp serve` killed with SIGKILL mid-subscription (the client reconnects after its
last cursor: nothing lost or twice), failing writes (ENOSPC, EROFS, EACCES), the bad-input corpus,
and the property tests under

and reject, early signals racing the step that opens their wait (the run or the signal killed),
runs started at once in a fresh repository, SIGKILL of signal / resume / run at random
moments, failing writes (ENOSPC, EROFS, EACCES), the bad-input corpus, and the property tests under
a longer hypothesis profile. Prints the summary (trials, accepted, refused by code, lost updates,
torn records, leftover claims, tracebacks) and exits 1 when anything was lost, torn, left held,
broken, or answered with a traceback outside the corpus cases that document known bugs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reliability_corpus as corpus  # noqa: E402
import reliability_kit as kit  # noqa: E402

SUBSCRIPTION_KILLS = {"quick": 2, "default": 8, "deep": 20}  # serve killed mid-subscription

# Early signals racing the step that opens their wait, per kind of kill (none, the run, the signal).
EARLY = {"quick": 3, "default": 15, "deep": 30}
PLANS = {
    # name: (kills per target, one-wait storms, forEach storms, races per kind, fresh-repo runs, storage)
    "quick": (4, 2, 1, 1, 1, False),
    "default": (100, 12, 8, 5, 5, True),
    "deep": (200, 30, 15, 12, 10, True),
}


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/reliability", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about a minute)")
    parser.add_argument("--deep", action="store_true", help="a much longer run, hypothesis profile `deep`")
    parser.add_argument("--seed", type=int, default=None, help="seed for the random moments and orders")
    parser.add_argument("--no-properties", action="store_true", help="skip the hypothesis property tests")
    parser.add_argument("--verbose", action="store_true", help="also print every violation and note")
    parser.add_argument(
        "--store",
        choices=("file", "postgresql"),
        default="file",
        help="postgresql: the several-hosts trials on a throwaway cluster of their own "
        "(scripts/reliability_pg.py) instead of the file-store trials",
    )
    args = parser.parse_args()
    if args.store == "postgresql":
        import reliability_pg

        report = reliability_pg.main(args.quick, args.seed)
        print(json.dumps(report, indent=2))
        return 0 if report["ok"] else 1
    plan_name = "quick" if args.quick else "deep" if args.deep else "default"
    kills, storms, fans, races, fresh_runs, storage = PLANS[plan_name]
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    started = time.monotonic()
    by_trial: dict[str, kit.Tally] = {}

    def trial(name: str, count: int, make: Callable[[], kit.Tally]) -> None:
        tally = by_trial.setdefault(name, kit.Tally())
        for _ in range(count):
            try:
                tally.add(make())
            except Exception as exc:  # a trial that cannot even finish is a finding, not a crash
                tally.trials += 1
                tally.violations.append(f"{name}: the trial itself failed: {type(exc).__name__}: {exc}")
        progress(f"{name}: {tally.trials} trials, {len(tally.violations)} violations")

    with kit.scratch() as base:
        trial("one-wait", storms, lambda: kit.trial_one_wait(base, rng.randrange(4, 13), rng))
        trial("forEach", fans, lambda: kit.trial_foreach(base, rng.randrange(3, 10), rng))
        for kind in kit.RACES:
            trial(f"race-{kind}", races, lambda kind=kind: kit.trial_race(base, kind, rng))
        for target in kit.EARLY_KILLS:
            trial(
                f"early-signal-{'kill-' + target if target else 'race'}",
                EARLY[plan_name],
                lambda t=target: kit.trial_early(base, rng, t),
            )
        trial("fresh-repo-runs", fresh_runs, lambda: kit.trial_fresh_runs(base, rng.randrange(3, 7), rng))
        trial(
            "serve-kill-subscription",
            SUBSCRIPTION_KILLS[plan_name],
            lambda: kit.trial_serve_kill_subscription(base, rng, rng.randrange(3, 7)),
        )
        windows = calibrate(base)
        for target in kit.KILL_TARGETS:
            trial(
                f"kill-{target}",
                kills,
                lambda t=target: kit.trial_kill(base, t, rng, kill_moment(rng, windows[t])),
            )
        if storage:
            for fault in kit.STORAGE_FAULTS:
                verbs = iter(kit.STORAGE_VERBS)
                trial(
                    f"storage-{fault}",
                    len(kit.STORAGE_VERBS),
                    lambda f=fault, v=verbs: kit.trial_storage(base, f, next(v)),
                )
        corpus_results = corpus.run_corpus(base / "corpus")
        progress("corpus: done")
        attacks = run_attacks(base / "attacks")
    properties = (
        None
        if args.no_properties
        else run_properties("deep" if args.deep else "ci" if args.quick else "long")
    )

    total = kit.Tally()
    for tally in by_trial.values():
        total.add(tally)
    corpus_summary = corpus.summary(corpus_results)
    known_tracebacks = sum(
        1 for r in corpus_results.values() if r.case.bug and any("traceback" in p for p in r.problems)
    )
    other_tracebacks = sum(
        1 for r in corpus_results.values() if not r.case.bug and any("traceback" in p for p in r.problems)
    )
    summary: dict[str, Any] = {
        "plan": plan_name,
        "seed": seed,
        "seconds": round(time.monotonic() - started, 1),
        **total.summary(),
        "tracebacks": total.tracebacks + other_tracebacks,
        "byTrial": {name: t.summary() for name, t in by_trial.items()},
        "corpus": {**corpus_summary, "tracebacksFromKnownBugs": known_tracebacks},
        "attacks": attack_summary(attacks),
        "properties": properties,
    }
    if args.verbose:
        summary["violationList"] = total.violations
        summary["notes"] = total.notes[-50:]
    print(json.dumps(summary, indent=2))
    bad = (
        summary["lostUpdates"]
        or summary["tornRecords"]
        or summary["leftoverClaims"]
        or summary["tracebacks"]
        or summary["violations"]
        or corpus_summary["unexpected"]
        or any(not a["held"] for a in attacks)
        or (properties is not None and properties["exitCode"] != 0)
    )
    return 1 if bad else 0


def progress(line: str) -> None:
    print(f"reliability: {line}", file=sys.stderr, flush=True)


def run_attacks(base: Path) -> list[dict[str, Any]]:
    """Every `scripts/attacks_<area>.py`: its `run(swamp, workdir)` returns one result per attack,
    `{attack, held, detail}`; a module that cannot even finish is a finding of its own."""
    results: list[dict[str, Any]] = []
    for path in sorted(Path(__file__).resolve().parent.glob("attacks_*.py")):
        area = path.stem.removeprefix("attacks_")
        workdir = base / area
        workdir.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        try:
            found = importlib.import_module(path.stem).run(kit.SWAMP, workdir)
        except Exception as exc:
            found = [{"attack": "(module)", "held": False, "detail": f"{type(exc).__name__}: {exc}"}]
        results += [{"area": area, **r} for r in found]
        progress(
            f"attacks {area}: {sum(r['held'] for r in found)}/{len(found)} held "
            f"in {time.monotonic() - began:.1f}s"
        )
    return results


def attack_summary(attacks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "total": len(attacks),
        "held": sum(1 for a in attacks if a["held"]),
        "byAttack": {
            f"{a['area']}/{a['attack']}": {"held": a["held"], "detail": a["detail"]} for a in attacks
        },
    }


def calibrate(base: Path) -> dict[str, float]:
    """How long each target takes when left alone here, so kills land across its whole life."""
    root = kit.fresh(base, "calibrate")
    wf = kit.kill_workflow(root)
    took = {}
    began = time.monotonic()
    first = kit.cli(root, "workflow", "run", wf, "--json")
    took["run"] = time.monotonic() - began
    wait_id = first.json["waits"][0]["waitId"]
    began = time.monotonic()
    kit.cli(root, "workflow", "signal", wait_id, "--payload", '{"n": 1}', "--json", now=kit.at(1))
    took["signal"] = time.monotonic() - began
    began = time.monotonic()
    kit.cli(root, "workflow", "resume", wf, "--json", now=kit.at(2))
    took["resume"] = time.monotonic() - began
    progress("calibrated: " + ", ".join(f"{k} {v:.2f}s" for k, v in took.items()))
    return took


def kill_moment(rng: random.Random, duration: float) -> float:
    """Half the kills anywhere in the process's life, half in its last third, where it writes."""
    if rng.random() < 0.5:
        return rng.uniform(0, duration * 1.1)
    return rng.uniform(duration * 0.66, duration * 1.05)


def run_properties(profile: str) -> dict[str, Any]:
    progress(f"property tests, hypothesis profile {profile}")
    began = time.monotonic()
    env = {**os.environ, "HYPOTHESIS_PROFILE": profile}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(kit.ROOT / "tests" / "property"),
        ],
        cwd=str(kit.ROOT),
        env=env,
        capture_output=True,
        text=True,
    )
    counts = {
        k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|xfailed|xpassed|error|errors)", done.stdout)
    }
    result: dict[str, Any] = {
        "profile": profile,
        "exitCode": done.returncode,
        "seconds": round(time.monotonic() - began, 1),
        **counts,
    }
    if done.returncode != 0:
        result["tail"] = [line[:300] for line in done.stdout.strip().splitlines()[-15:]]
    return result


if __name__ == "__main__":
    sys.exit(main())
