"""Concurrent signals from many real processes (WAIT-028, CLAIM-001).

Against one wait exactly one signal is taken and every other is wait_settled with the identical
stored receipt; against many waits of one run (forEach) every wait ends settled with its own
payload; a signal racing a resume, a cancel or a reject ends in one consistent state. The trials
live in scripts/reliability_kit.py, which scripts/reliability runs by the hundred.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import reliability_kit as kit  # noqa: E402

pytestmark = pytest.mark.cli


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with kit.scratch(tmp_path_factory.mktemp("concurrency")) as path:
        yield path


def clean(tally: kit.Tally) -> None:
    assert tally.clean, {"summary": tally.summary(), "violations": tally.violations, "notes": tally.notes}


def test_one_wait_many_signallers(base: Path) -> None:
    tally = kit.trial_one_wait(base, 8, random.Random(7))
    clean(tally)
    assert (tally.accepted, dict(tally.refused)) == (1, {"wait_settled": 7})


def test_many_waits_of_one_run(base: Path) -> None:
    tally = kit.trial_foreach(base, 6, random.Random(11))
    clean(tally)
    assert (tally.accepted, dict(tally.refused)) == (6, {})


@pytest.mark.parametrize("kind", kit.RACES)
def test_a_signal_racing_another_command(base: Path, kind: str) -> None:
    for seed in (1, 2):
        clean(kit.trial_race(base, kind, random.Random(seed)))


def test_runs_started_at_once_in_a_fresh_repository(base: Path) -> None:
    """The active-run index is built while the first runs are being recorded: none goes missing."""
    tally = kit.trial_fresh_runs(base, 4, random.Random(5))
    clean(tally)
    assert tally.accepted == 4


def test_the_checks_can_fail(base: Path) -> None:
    """The invariant checker flags the damage the trials look for (so a clean tally means something)."""
    root = kit.fresh(base, "checker")
    run = kit.start_run(root, kit.one_wait_workflow(root))
    path = root / run["path"]
    data = path.read_text(encoding="utf-8")
    doc = kit.the_run(root, run["id"])
    assert kit.violations(doc) == []
    record = json.loads(data)
    waiting = next(s for j in record["jobs"] for s in j["steps"] if s.get("wait"))
    waiting["wait"]["outcome"] = "received"  # settled, yet the step still says waiting
    path.write_text(json.dumps(record), encoding="utf-8")
    assert kit.violations(kit.the_run(root, run["id"]))
    path.write_text(data[: len(data) // 2], encoding="utf-8")
    tally = kit.Tally()
    tally.inspect(root)
    assert tally.torn == 1
    from swamp.store.claim import RunClaim
    from swamp.store.repo import find_repo

    with RunClaim(find_repo(str(root)), run["id"]):
        assert kit.claim_held(root, run["id"]) is True  # flock: each open file description counts
    assert kit.claim_held(root, run["id"]) is False
    assert kit.claim_held(root, "no-such-run") is False
