"""An early signal races the step that opens its wait (WAIT-075): over random moments (before the
run reaches the step, as it opens, after it suspended) and payloads, a signal that was answered
with exit 0 is applied exactly once with its payload unchanged, and nothing stays held.

The run executes in a thread and the signal is sent from this one (no process start), so it can
land anywhere in the window, to the millisecond; a sibling step of the wait keeps the run executing
for a moment after the wait opened (the executor has looked for a held signal already, and looks
again before it lets the claim go).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import reliability_kit as kit
from conftest_hypothesis import scaled
from hypothesis import event, given, settings
from hypothesis import strategies as st

NAMES = itertools.count()


@settings(max_examples=scaled(0.6))
@given(
    pre=st.sampled_from([0.0, 0.01, 0.03]),
    sibling=st.sampled_from([0.0, 0.02, 0.06]),
    delay=st.floats(min_value=0, max_value=0.12),
    n=st.integers(min_value=-(2**53), max_value=2**53),
    by=st.text(max_size=12),
)
def test_an_early_signal_is_applied_once_with_its_payload(
    kit_repo: Path, pre: float, sibling: float, delay: float, n: int, by: str
) -> None:
    tally, outcome = kit.early_race(
        kit_repo,
        f"early-{next(NAMES)}",
        pre_sleep=pre,
        sibling_sleep=sibling,
        signal_delay=delay,
        payload={"n": n, "by": by},
        in_process=True,
    )
    event(
        "held early"
        if outcome.get("held")
        else "taken by the open wait"
        if outcome.get("acknowledged")
        else "refused"
    )
    assert tally.clean, tally.violations + tally.notes
    assert not tally.lost
