"""Executes a WorkflowRun: job levels, step levels, guards, forEach, failures and suspension.

Jobs and steps run in topological levels with a barrier between levels; the members of a level
run concurrently up to the concurrency cap. Every change to the run happens under one lock. A step
that starts waiting (a gate or a signal wait) lets its siblings finish; then no new level starts
and the run is saved `suspended`.

Saves (RUN-034, RUN-035): the record is written durably when a fresh run starts, before a level
of steps that act outside the run (a model method) starts, and when the run suspends, ends or is
stopped. The saves after each level, and the one marking a continued run `running`, are deferred
into the next durable one: nothing outside the process needs them sooner, and a continuation
costs two writes instead of one per level.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from ..domain.changes import save_deferred
from ..domain.conditions import condition_holds
from ..domain.definition import Job, Step, Workflow
from ..domain.errors import ExpressionError
from ..domain.expressions import Scope, is_truthy, whole_expression
from ..domain.graph import Node, topological_levels
from ..domain.instants import iso
from ..domain.run import WAITING_STEP, JobRun, StepRun, WorkflowRun
from . import foreach
from .ports import EngineServices
from .tasks import dispatch, has_effect
from .tasks.base import Failed, Outcome, StepExecution, Succeeded, Suspended

T = TypeVar("T")
MAX_THREADS = 32


def resolve_cap(local: int | None, host: int | None) -> int | None:
    values = [v for v in (local, host) if v is not None and v > 0]
    return min(values) if values else None


class WorkflowExecutor:
    def __init__(
        self,
        workflow: Workflow,
        run: WorkflowRun,
        services: EngineServices,
        *,
        inputs: dict[str, Any] | None = None,
    ):
        self.workflow = workflow
        self.run = run
        self.services = services
        # Resume inputs reach expressions without being written into the record (they may be secret).
        self.inputs = run.inputs if inputs is None else inputs
        self.lock = threading.RLock()
        self.suspending = threading.Event()
        self._abandon_hooks: dict[int, Callable[[], None]] = {}
        self._next_hook = 0
        # Set once the run is recorded as stopped here; from then on its record is final, and a step
        # whose command dies of the stop must not overwrite "interrupted" with its exit code.
        self._abandoned = False
        # Set by `interrupt` (a signal to the process executing the run): (reason, signal name).
        self._interruption: tuple[str, str | None] | None = None
        # A save was deferred (RUN-035): the run changed since its record was last written.
        self._unsaved = False
        self._jobs_executing = 0  # jobs of the current job level still executing (their threads)

    # -- helpers ------------------------------------------------------------------------------

    def _now(self) -> str:
        return iso(self.services.clock.now())

    def _emit(self, name: str, /, **fields: Any) -> None:
        self.services.emit({"event": name, "at": self._now(), **fields})

    def _save(self, *, durable: bool = True) -> None:
        """Save the run; `durable=False`: a save nothing outside this process needs before the next
        one (RUN-035), deferred and merged into it."""
        with self.lock:
            if self._abandoned:
                return
            if not durable:
                self._unsaved = True
                save_deferred(self.run)
                return
            self._unsaved = False
            self.services.save(self.run)
            if self.services.early is not None:
                self.services.early.after_save(self.run)

    def _save_before_effect(self, job: Job, level: list[StepRun]) -> None:
        """RUN-034 (b): before steps that act outside the run start, what the run did so far is
        durable (the run `running`, earlier levels' outputs): a process killed during the step
        leaves a record that reads as interrupted, and the step reading the record finds it so."""
        acting = [s for s in level if s.status in ("pending", "running")]
        if any(has_effect(_step_def(job, s.template).task) for s in acting):
            with self.lock:
                if self._unsaved:
                    self._save()

    def _save_after_level(self) -> None:
        """RUN-034 (c): while another job is still executing (a step of it may yet kill the process,
        and whoever watches may answer a wait this level opened), the level is durable at once;
        otherwise its save waits for the next durable one (RUN-035)."""
        with self.lock:
            self._save(durable=self._jobs_executing > 1)

    def _sweep_held(self) -> bool:
        """After the last save before the claim goes: what was held for the run's waits meanwhile
        is applied (True: saved again) or refused (app/held.py)."""
        early = self.services.early
        if early is None:
            return False
        with self.lock:
            now = self.services.clock.now()
            open_before = {
                s.wait.waitId for _, s in self.run.steps() if s.wait is not None and s.wait.outcome is None
            }
            applied = early.sweep(self.run, now)
        if applied:
            self._save()
            self._report_settled(open_before, now)
        return applied

    def _report_settled(self, open_before: set[str], now: Any) -> None:
        """WATCH-016: each wait that a held signal settled in the sweep, as `wait_settled` (the
        form a watch streams), so whoever follows the run sees the answer go in."""
        from ..domain.changes import settled_since

        for job, step in self.run.steps():
            if step.wait is not None and step.wait.waitId in open_before:
                event = settled_since(None, job.name, step, now)
                if event is not None:
                    self.services.emit(event)

    def _parallel(self, items: Sequence[T], cap: int | None, work: Callable[[T], None]) -> None:
        if len(items) == 1 or cap == 1:
            for item in items:
                work(item)
            return
        workers = min(len(items), cap or MAX_THREADS, MAX_THREADS)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            # Each worker in a copy of this context: what the request collects (the hooks its
            # saves start, hooks/report.py) is collected from every worker too.
            for future in [pool.submit(contextvars.copy_context().run, work, item) for item in items]:
                future.result()

    # -- the run -----------------------------------------------------------------------------

    def execute(self, *, resumed: bool = False) -> WorkflowRun:
        """Run until the run finishes, suspends or is stopped. An unexpected error still leaves a
        saved, finished record (the run failed, what was running marked so) before it propagates."""
        self.services.attach(self)
        try:
            return self._execute(resumed)
        except BaseException as exc:
            self.abandon(f"engine error: {type(exc).__name__}: {exc}")
            raise
        finally:
            self.services.detach(self)

    def on_abandon(self, stop: Callable[[], None]) -> Callable[[], None]:
        """Remember how to stop a step's work at once (a command's process group)."""
        with self.lock:
            key = self._next_hook
            self._next_hook += 1
            self._abandon_hooks[key] = stop
            stopped = self._interruption is not None or self._abandoned
        if stopped:  # the work started just as the run was stopped: stop it too
            with contextlib.suppress(Exception):
                stop()

        def forget() -> None:
            self._abandon_hooks.pop(key, None)

        return forget

    def interrupt(self, reason: str, *, signal: str | None = None) -> None:
        """Stop the run from outside while its process stays to record it (Ctrl-C, SIGTERM): from
        now on no step or level starts, what running steps do is stopped at once (a command's
        process group), each step so stopped is recorded failed with reason interrupted, and the
        run ends failed with `interruption`. Safe to call from any thread; once only."""
        with self.lock:
            if self._interruption is not None or self._abandoned:
                return
            self._interruption = (reason, signal)
            stops = list(self._abandon_hooks.values())
        for stop in stops:
            with contextlib.suppress(Exception):
                stop()

    def abandon(self, why: str) -> None:
        """Record the run as stopped here: what steps were doing is stopped, running steps failed
        (interrupted), the run failed."""
        with self.lock:
            if self._abandoned or self.run.is_terminal or self.run.status == "suspended":
                return
            self._abandoned = True
        for stop in list(self._abandon_hooks.values()):
            with contextlib.suppress(Exception):
                stop()
        with self.lock:
            now = self.services.clock.now()
            for _, step in self.run.steps():
                if step.status == "running":
                    step.fail(now, f"interrupted: {why}", reason="interrupted")
            self.run.interrupt(now, why)
            with contextlib.suppress(Exception):  # the first error is the one to report
                self.services.save(self.run)
                if self.services.early is not None:  # early signals of waits it never opened
                    self.services.early.sweep(self.run, now)

    def _stop_reason(self) -> str | None:
        if self._interruption is not None:
            return f"interrupted: {self._interruption[0]}"
        return self.services.stop_reason()

    def _execute(self, resumed: bool) -> WorkflowRun:
        with self.lock:
            self.run.start(self.services.clock.now())
        # A fresh run is recorded `running` at once (watch, history, held signals find it); a
        # continued one only before its first effect (RUN-034): until then it is as it was.
        self._save(durable=not resumed)
        self._emit(
            "run_resumed" if resumed else "run_started", runId=self.run.id, workflow=self.run.workflowName
        )
        nodes = [Node(j.name, j.weight, tuple(d.job for d in j.dependsOn)) for j in self.workflow.jobs]
        cap = resolve_cap(self.workflow.concurrency, self.services.max_concurrency)
        for level in topological_levels(nodes):
            if self._stop_reason():
                break
            jobs = [self.workflow.job(n.name) for n in level]
            self._parallel(jobs, cap, self._run_job)
            self._save(durable=False)
            if self._interruption is None and (self.suspending.is_set() or self.run.waiting_steps()):
                return self._suspend()
        reason = self._stop_reason()
        if reason is not None:
            return self._stopped(reason)
        with self.lock:
            self.run.complete(self.services.clock.now())
        self._save()
        self._sweep_held()
        self._emit("run_completed", runId=self.run.id, status=self.run.status)
        return self.run

    def _stopped(self, reason: str) -> WorkflowRun:
        """Stopped between levels: a cancel cancels the run; a signal (`interrupt`) or serve's
        shutdown interrupts it, with that reason."""
        with self.lock:
            if self._interruption is not None:
                why, signal = self._interruption
                self.run.interrupt(self.services.clock.now(), why, signal=signal)
            elif reason.startswith("cancel"):
                self.run.cancel(self.services.clock.now(), reason)
            else:
                self.run.interrupt(self.services.clock.now(), "swamp serve shut down")
        self._save()
        self._sweep_held()
        self._emit("run_completed", runId=self.run.id, status=self.run.status, stopped=reason)
        return self.run

    def _suspend(self) -> WorkflowRun:
        with self.lock:
            self.run.suspend()
        self._save()
        waiting = [{"job": j.name, "step": s.name, "status": s.status} for j, s in self.run.waiting_steps()]
        self._emit("run_suspended", runId=self.run.id, waiting=waiting)
        if self._sweep_held():
            # A signal held after its wait opened (the executor had looked already) was applied
            # before the claim goes: go on as a resume would, when nothing else is open.
            now = self.services.clock.now()
            with self.lock:
                idle = not self.run.open_waits(now) and not self.run.open_gates(now)
                if idle:
                    self.run.resume(now, [])
                    self.suspending.clear()
            if idle:
                self._save(durable=False)
                return self._execute(resumed=True)
        return self.run

    # -- jobs ----------------------------------------------------------------------------------

    def _run_job(self, job: Job) -> None:
        with self.lock:
            self._jobs_executing += 1
        try:
            self._execute_job(job)
        finally:
            with self.lock:
                self._jobs_executing -= 1

    def _execute_job(self, job: Job) -> None:
        job_run = self.run.job(job.name)
        if job_run.status in ("succeeded", "failed", "skipped"):
            return
        with self.lock:
            unmet = [
                d.job for d in job.dependsOn if not condition_holds(d.condition, self.run.job(d.job).status)
            ]
            if unmet:
                job_run.skip(self.services.clock.now())
        if unmet:
            self._emit("job_skipped", job=job.name, reason="dependency", dependsOn=unmet)
            return
        with self.lock:
            job_run.start(self.services.clock.now())
        self._emit("job_started", job=job.name)
        if not self._expand_templates(job, job_run):
            self._finish_job(job_run, failed=True)
            return
        failed = any(s.status == "failed" and not s.allowedFailure for s in job_run.steps)
        for level in step_levels(job, job_run):
            # A job stops at its own waiting steps, never at another job's: what a job does must
            # not depend on thread timing. The run suspends at the job-level barrier.
            if failed or self._stop_reason() or any(s.status in WAITING_STEP for s in job_run.steps):
                break
            scope = self._scope(job_run)
            cap = resolve_cap(self._level_cap(job, level), self.services.max_concurrency)
            self._save_before_effect(job, level)
            self._parallel(level, cap, partial(self._run_step, job, job_run, scope=scope))
            self._save_after_level()
            with self.lock:
                failed = any(s.status == "failed" and not s.allowedFailure for s in job_run.steps)
        with self.lock:
            waiting = any(s.status in ("waiting", "waiting_approval") for s in job_run.steps)
            unfinished = any(s.status == "pending" for s in job_run.steps)
        cut_short = self._stop_reason() is not None
        if waiting or (cut_short and unfinished and not failed):
            return  # the job goes on when the run is resumed
        self._finish_job(job_run, failed=failed)

    def _finish_job(self, job_run: JobRun, *, failed: bool) -> None:
        with self.lock:
            if failed:
                job_run.fail(self.services.clock.now())
            else:
                job_run.succeed(self.services.clock.now())
        self._emit("job_completed", job=job_run.name, status=job_run.status, durationMs=job_run.durationMs)

    def _expand_templates(self, job: Job, job_run: JobRun) -> bool:
        """Replace each forEach template by its expansions; False if an expansion failed."""
        ok = True
        for step in job.steps:
            if step.forEach is None or step.name in job_run.expandedTemplates:
                continue
            template_run = job_run.step(step.name)
            if template_run is None or template_run.status != "pending":
                continue
            try:
                expansions = foreach.expand(step, self.services.expressions, self._scope(job_run))
            except ExpressionError as exc:
                message = f"forEach.in of step '{step.name}': {exc.message}"
                self._fail_template(job.name, template_run, message)
                ok = False
                continue
            others = {s.name for s in job.steps if s.name != step.name}
            clashes = sorted(e.name for e in expansions if e.name in others)
            if clashes:
                self._fail_template(
                    job.name,
                    template_run,
                    f"forEach of step '{step.name}' expands to {', '.join(clashes)}, "
                    "which another step of the job is already called; rename one of them",
                )
                ok = False
                continue
            with self.lock:
                job_run.replace_template(step.name, expansions)
        return ok

    def _fail_template(self, job_name: str, template_run: StepRun, message: str) -> None:
        """A forEach step that cannot expand fails as itself (it never ran, so it cannot be allowed to)."""
        with self.lock:
            template_run.fail(self.services.clock.now(), message)
        self._emit(
            "step_failed",
            job=job_name,
            step=template_run.name,
            error=template_run.error,
            allowedFailure=False,
        )

    def _level_cap(self, job: Job, level: list[StepRun]) -> int | None:
        step_caps = [
            c for c in (_step_def(job, s.template).concurrency for s in level) if c is not None and c > 0
        ]
        if step_caps:
            return min(step_caps)
        if job.concurrency is not None:
            return job.concurrency
        return self.workflow.concurrency

    def _scope(self, job_run: JobRun) -> Scope:
        with self.lock:
            steps: dict[str, Any] = {}
            for other in self.run.jobs:
                if other is not job_run:
                    steps.update(_step_views(other))
            steps.update(_step_views(job_run))
            return Scope(
                {
                    "inputs": self.inputs,
                    "run": {
                        "id": self.run.id,
                        "workflowId": self.run.workflowId,
                        "workflowName": self.run.workflowName,
                        "startedAt": self.run.startedAt,
                        "tags": self.run.tags,
                    },
                    "env": self.services.env,
                    "steps": steps,
                    "self": {},
                }
            )

    # -- steps ---------------------------------------------------------------------------------

    def _run_step(self, job: Job, job_run: JobRun, step_run: StepRun, *, scope: Scope) -> None:
        if step_run.status != "pending" and step_run.status != "running":
            return
        if self._stop_reason():
            return  # not started: it stays pending
        step = _step_def(job, step_run.template)
        now = self.services.clock.now
        with self.lock:
            unmet = [
                d.step
                for d in step.dependsOn
                if not condition_holds(d.condition, job_run.dependency_status(d.step))
            ]
            if unmet:
                step_run.skip(now(), "dependency")
        if unmet:
            self._emit("step_skipped", job=job.name, step=step_run.name, reason="dependency", dependsOn=unmet)
            return
        if step_run.forEachItem:
            scope = scope.with_self(step_run.forEachItem)
        if step.guard is not None:
            source = whole_expression(step.guard)
            assert source is not None
            try:
                guarded = is_truthy(self.services.expressions.evaluate(source, scope))
            except ExpressionError as exc:
                with self.lock:
                    step_run.start(now())
                    step_run.fail(now(), f"Guard expression failed: {exc.message}", reason="guard_error")
                self._emit(
                    "step_failed",
                    job=job.name,
                    step=step_run.name,
                    error=step_run.error,
                    allowedFailure=False,
                )
                return
            if guarded:
                with self.lock:
                    step_run.skip(now(), "guarded")
                self._emit(
                    "step_skipped", job=job.name, step=step_run.name, reason="guarded", guard=step.guard
                )
                return
        with self.lock:
            step_run.start(now())
        self._emit("step_started", job=job.name, step=step_run.name, task=step.task.type)
        execution = StepExecution(self.run, job_run, step_run, step, scope, self.services, self.on_abandon)
        outcome = dispatch(step.task, execution)
        self._apply(job, step, step_run, outcome)

    def _apply(self, job: Job, step: Step, step_run: StepRun, outcome: Outcome) -> None:
        now = self.services.clock.now()
        taken_early = False  # a signal held for the wait was taken as it opened (WAIT-072)
        with self.lock:
            if self._abandoned:
                return  # the step was recorded as interrupted; what its work did after that is moot
            if isinstance(outcome, Succeeded):
                step_run.succeed(now, outcome.outputs)
            elif isinstance(outcome, Failed) and self._interruption is not None:
                # Its work was stopped by the interruption (a killed command's exit code is moot).
                outcome = Failed(
                    f"interrupted: {self._interruption[0]}", "interrupted", False, outcome.outputs
                )
                allowed = False
                step_run.fail(now, outcome.error, reason=outcome.reason)
                if outcome.outputs is not None:
                    step_run.outputs = outcome.outputs
            elif isinstance(outcome, Failed):
                allowed = step.allowFailure and outcome.allowable
                step_run.fail(now, outcome.error, reason=outcome.reason, allowed=allowed)
                if outcome.outputs is not None:
                    step_run.outputs = outcome.outputs
            elif isinstance(outcome, Suspended):
                details = outcome.open_wait(step_run, now)
                early = self.services.early
                if step_run.wait is not None and early is not None:
                    taken_early = early.at_open(self.run, self.run.job(job.name), step_run, now)
                if not taken_early:
                    self.suspending.set()
        if isinstance(outcome, Succeeded):
            self._emit("step_succeeded", job=job.name, step=step_run.name, durationMs=step_run.durationMs)
        elif isinstance(outcome, Failed):
            self._emit(
                "step_failed",
                job=job.name,
                step=step_run.name,
                error=outcome.error,
                reason=outcome.reason,
                allowedFailure=allowed,
                durationMs=step_run.durationMs,
            )
        elif isinstance(outcome, Suspended):
            self._emit("step_waiting", job=job.name, step=step_run.name, **details)
            if taken_early and step_run.wait is not None and step_run.wait.receipt is not None:
                self._emit(
                    "step_succeeded",
                    job=job.name,
                    step=step_run.name,
                    durationMs=step_run.durationMs,
                    heldSignal=step_run.wait.receipt.id,
                )


def step_levels(job: Job, job_run: JobRun) -> list[list[StepRun]]:
    """The job's steps (forEach expansions included) in execution levels: a level starts only once
    the previous one is done, and a job stops at a level holding a waiting step."""
    by_template: dict[str, list[str]] = {}
    for s in job_run.steps:
        by_template.setdefault(s.template, []).append(s.name)
    nodes = []
    for step_run in job_run.steps:
        definition = _step_def(job, step_run.template)
        deps: list[str] = []
        for dep in definition.dependsOn:
            deps.extend(by_template.get(dep.step, [dep.step]))
        nodes.append(Node(step_run.name, definition.weight, tuple(deps)))
    runs = {s.name: s for s in job_run.steps}
    return [[runs[n.name] for n in level] for level in topological_levels(nodes)]


def _step_def(job: Job, name: str) -> Step:
    for step in job.steps:
        if step.name == name:
            return step
    raise KeyError(f"step '{name}' of job '{job.name}' is not in the workflow")


def _step_views(job_run: JobRun) -> dict[str, Any]:
    views: dict[str, Any] = {}
    for s in job_run.steps:
        view = {"status": s.status, "outputs": s.outputs if s.outputs is not None else {}}
        if s.reservedWaitId is not None:  # readable before the step runs (EXPR-019)
            view["waitId"] = s.reservedWaitId
        views[s.name] = view
    return views
