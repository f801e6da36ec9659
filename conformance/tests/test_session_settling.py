"""An `expect` inside a session is decided on a state seen whole: a process that ends while an
expectation is being evaluated gets one more evaluation, not a failure (the old race: the
evaluation saw it running, the settled check then saw it ended, and the step failed)."""

from types import SimpleNamespace

from swamp_conformance_runner.scenario import STDIO, Step
from swamp_conformance_runner.session import Session, SessionFailure


class EndsOnSecondPoll:
    """A process that is still running at the first look and has exited 0 at every later one."""

    def __init__(self) -> None:
        self.polls = 0

    def poll(self) -> int | None:
        self.polls += 1
        return None if self.polls == 1 else 0


def session_with_ended_streams(proc: object) -> Session:
    run = SimpleNamespace(
        captures={}, _sub=lambda value, where: value, frame_problem=lambda number, frame: None
    )
    session = Session(run, Step(0, "session", {"session": {"args": []}}))  # type: ignore[arg-type]
    session.proc = proc  # type: ignore[assignment]
    channel = session._channel(STDIO)
    channel.eof = True
    session.stderr_ended.set()
    return session


def test_an_exit_during_evaluation_is_evaluated_again():
    session = session_with_ended_streams(EndsOnSecondPoll())
    session._do_expect(Step(1, "expect", {"expect": {"exit": 0}}, parent=0))


def test_an_exit_that_does_not_match_still_fails_once_settled():
    session = session_with_ended_streams(SimpleNamespace(poll=lambda: 3))
    try:
        session._do_expect(Step(1, "expect", {"expect": {"exit": 0}}, parent=0))
    except SessionFailure as failure:
        assert any("nothing more can arrive" in p for p in failure.problems)
    else:
        raise AssertionError("an exit code of 3 matched an expected 0")
