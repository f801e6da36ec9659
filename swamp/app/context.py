"""The services one command needs, built once from the repository it works on."""

from __future__ import annotations

import copy
import os
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from ..domain.actors import Actor
from ..domain.errors import SwampError
from ..store.clock import SystemClock, process_actor
from ..store.repo import RepoLayout, find_repo

if TYPE_CHECKING:
    from ..domain.changes import RunState
    from ..domain.expressions import ExpressionEngine
    from ..domain.inputs import InputValidationService
    from ..domain.run import WorkflowRun
    from ..domain.settings import Settings
    from ..domain.shellwords import ShellArguments
    from ..models.runner import ModelMethodRunner
    from ..store.workflows import WorkflowRepository
    from .ports import Claim, EventLog, HeldSignals, RunStore, Store


_SHARED: dict[tuple[str | None, str | None, str], App] = {}
_SHARED_LOCK = threading.Lock()


@dataclass
class App:
    layout: RepoLayout
    clock: SystemClock = field(default_factory=SystemClock)
    actor: Actor | None = None  # None: this process's own (process_actor)

    @classmethod
    def open(cls, repo_dir: str | None = None) -> App:
        return cls(find_repo(repo_dir))

    @classmethod
    def shared(cls, repo_dir: str | None = None) -> App:
        """One App per repository for a long-lived process (`--jsonl`, `serve`): finding the
        repository and building its services is then paid once, not per request. Everything an App
        holds is either immutable or re-read under the run claim, so requests can share it."""
        key = (repo_dir, os.environ.get("SWAMP_REPO_DIR"), os.getcwd())
        with _SHARED_LOCK:
            app = _SHARED.get(key)
        if app is None or not os.path.isfile(app.marker_file):
            app = cls.open(repo_dir)
            with _SHARED_LOCK:
                _SHARED[key] = app
        return app

    @cached_property
    def marker_file(self) -> str:
        return str(self.layout.marker)

    @cached_property
    def workflows(self) -> WorkflowRepository:
        from ..store.workflows import WorkflowRepository

        return WorkflowRepository(self.layout)

    @cached_property
    def settings(self) -> Settings:
        """The repository's settings (`.swamp.yaml`), read once per App: a long-lived process
        (`serve`, `--jsonl`) reads them when it first needs them and keeps them."""
        from ..store.settings import load_settings

        return load_settings(self.layout)

    @cached_property
    def store(self) -> Store:
        """Where run state lives (app/ports.py): the file store, or PostgreSQL when the settings or
        SWAMP_STORE_URL name a database. Every command that reads or changes runs checks the
        settings first (REPO-012): a bad setting is refused before anything is done, never found
        by a save that cannot be undone."""
        from ..store.choose import open_store

        return open_store(self.layout, self.settings)

    @cached_property
    def runs(self) -> RunStore:
        return self.store.runs(self._publish)

    @cached_property
    def events(self) -> EventLog:
        """The store's event log: what every save of a run changed, for subscribers."""
        return self.store.events()

    @cached_property
    def held(self) -> HeldSignals:
        """Signals held for waits that have not opened, or whose run was busy (app/held.py)."""
        return self.store.held()

    def claim(
        self, run_id: str, *, timeout: float | None = None, purpose: str = "", brief: bool = False
    ) -> Claim:
        """The run's claim (not yet taken): `with app.claim(...)` or try_acquire(); `brief`: see
        the store port."""
        claim: Claim = self.store.claim(run_id, timeout=timeout, purpose=purpose, brief=brief)
        return claim

    def claim_held(self, run_id: str) -> bool:
        return self.store.claim_held(run_id)

    def _publish(self, before: RunState | None, run: WorkflowRun) -> None:
        from .publish import publish

        publish(self, before, run)

    @cached_property
    def validation(self) -> InputValidationService:
        from ..domain.inputs import InputValidationService

        return InputValidationService()

    @cached_property
    def expressions(self) -> ExpressionEngine:
        from ..domain.expressions import ExpressionEngine

        return ExpressionEngine()

    @cached_property
    def methods(self) -> ModelMethodRunner:
        from ..models.runner import ModelMethodRunner

        return ModelMethodRunner(self.layout, self.validation)

    def shell_arguments(self, model: str, method: str) -> ShellArguments | None:
        """The shell arguments of a model's method for `workflow validate`, or None when the model
        or method cannot be had now (running the step says why)."""
        try:
            return self.methods.shell_arguments(model, method)
        except SwampError:
            return None

    def acting_as(self, actor: Actor | None) -> App:
        """This App (its services shared) for a request made by `actor` (None: this process)."""
        if actor is None or actor == self.actor:
            return self
        acting = copy.copy(self)
        acting.actor = actor
        return acting

    @property
    def acting(self) -> Actor:
        return self.actor if self.actor is not None else process_actor()

    @property
    def user(self) -> str:
        """The account that acts: recorded as submittedBy, decidedBy, initiatedBy, an audit's by."""
        return self.acting.account

    @property
    def on_behalf_of(self) -> str | None:
        return self.acting.on_behalf_of

    def groups_of(self, account: str) -> frozenset[str]:
        """The OS groups of `account` (store/accounts.py): what a policy's `groups` are judged by."""
        from ..store.accounts import groups_of

        return groups_of(account)

    @staticmethod
    def host_concurrency() -> int | None:
        raw = os.environ.get("SWAMP_MAX_CONCURRENT_STEPS")
        return int(raw) if raw and raw.isdigit() and int(raw) > 0 else None
