"""Naming a run or a wait by a prefix of its ID: the errors when a prefix matches several, or is
too short to be one (issue 30, item 8), in one wording for every command that takes one (`watch`,
`history get`, `--run` of resume/approve/reject/cancel/signal, `signal`, `wait show`, `reject`...).

An ambiguous prefix lists its candidates, each with its workflow and status (a wait's also its
step), so the next command can be typed without another look: `watch f` matching two runs says
which two. The stores and waitref.py find the candidates; the text is made here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import RunAmbiguous
from .waits import MIN_WAIT_PREFIX, WAIT_ID, WAIT_PREFIX, WaitAmbiguous, WaitNotFound, given_text

if TYPE_CHECKING:
    from .run import WorkflowRun

_SHORT_WAIT_PREFIX = re.compile(rf"^wait_[a-z2-7]{{0,{MIN_WAIT_PREFIX - 1}}}$")
SHOWN = 10  # candidates described in a message; details list every ID


@dataclass(frozen=True)
class Candidate:
    """One run or wait a prefix matches."""

    id: str
    workflow: str | None  # None: its record could not be read
    status: str
    step: str | None = None  # a wait's step (`job/step` when the step's name repeats in jobs)

    def text(self) -> str:
        where = self.workflow if self.workflow is not None else "unreadable record"
        step = f" step {self.step}" if self.step else ""
        return f"{self.id} ({where}{step}, {self.status})"

    def to_dict(self, key: str) -> dict[str, Any]:
        out: dict[str, Any] = {key: self.id, "workflowName": self.workflow, "status": self.status}
        if self.step is not None:
            out["step"] = self.step
        return out


def run_candidate(run: WorkflowRun) -> Candidate:
    return Candidate(run.id, run.workflowName, run.status)


def wait_candidate(wait_id: str, run: WorkflowRun | None) -> Candidate:
    """A wait as its run holds it: open, reserved (its step has not opened it), or how it settled."""
    if run is None:
        return Candidate(wait_id, None, "unknown")
    for job, step in run.steps():
        where = f"{job.name}/{step.name}"
        if step.wait is not None and step.wait.waitId == wait_id:
            return Candidate(wait_id, run.workflowName, step.wait.outcome or "open", where)
        if step.wait is None and step.reservedWaitId == wait_id:
            return Candidate(wait_id, run.workflowName, "reserved", where)
    return Candidate(wait_id, run.workflowName, "closed")


def listed(candidates: list[Candidate], total: int) -> str:
    shown = "; ".join(c.text() for c in candidates[:SHOWN])
    more = total - min(len(candidates), SHOWN)
    return shown + (f"; and {more} more" if more > 0 else "")


def ambiguous_run(ref: str, candidates: list[Candidate], ids: list[str]) -> RunAmbiguous:
    """`ref` starts several run IDs (`ids`, sorted; `candidates` describes the first of them)."""
    return RunAmbiguous(
        f"'{ref}' is the start of {len(ids)} run IDs: {listed(candidates, len(ids))}. "
        "Give more of the run ID (swamp workflow history lists runs)",
        {"run": ref, "runIds": ids, "runs": [c.to_dict("runId") for c in candidates[:SHOWN]]},
    )


def ambiguous_wait(prefix: str, candidates: list[Candidate], ids: list[str]) -> WaitAmbiguous:
    return WaitAmbiguous(
        f"{prefix} is the start of {len(ids)} wait IDs: {listed(candidates, len(ids))}. "
        f"Give more of its characters (a prefix needs wait_ and at least {MIN_WAIT_PREFIX} more)",
        {"waitId": prefix, "candidates": ids, "waits": [c.to_dict("waitId") for c in candidates[:SHOWN]]},
    )


def wait_prefix_too_short(prefix: str) -> WaitNotFound:
    """`wait_` and fewer than MIN_WAIT_PREFIX characters: a prefix, but too short to name a wait."""
    return WaitNotFound(
        f"{prefix} is too short to name a wait: give wait_ and at least {MIN_WAIT_PREFIX} of its characters "
        f"(it has {len(prefix) - len('wait_')}); list open waits with: swamp workflow waits",
        {"waitId": prefix, "reason": "too_short", "minimum": MIN_WAIT_PREFIX},
    )


def check_wait_ref(text: str) -> bool:
    """Whether `text` is a whole wait ID (True) or a prefix of one (False); a prefix too short to
    use, and anything else, is refused with wait_not_found before any lookup."""
    if isinstance(text, str) and WAIT_ID.fullmatch(text):
        return True
    if isinstance(text, str) and WAIT_PREFIX.fullmatch(text):
        return False
    if isinstance(text, str) and _SHORT_WAIT_PREFIX.fullmatch(text):
        raise wait_prefix_too_short(text)
    shown, kept = given_text(text)
    raise WaitNotFound(
        f"{shown} is not a wait ID (wait_ followed by 26 letters a-z and digits 2-7) nor a prefix of one "
        f"(wait_ and at least {MIN_WAIT_PREFIX} of them); list open waits with: swamp workflow waits",
        {"waitId": kept, "reason": "malformed"},
    )
