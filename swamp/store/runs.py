"""The run repository: one JSON record per run at .swamp/workflow-runs/<workflowId>/<runId>.json."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from ..domain.errors import RunAmbiguous, RunNotFound, RunUnreadable
from ..domain.run import WorkflowRun
from .files import write_atomic
from .repo import RepoLayout


class RunRepository:
    def __init__(self, layout: RepoLayout):
        self.layout = layout

    def path_for(self, workflow_id: str, run_id: str) -> Path:
        return self.layout.runs_dir / workflow_id / f"{run_id}.json"

    def relative_path(self, run: WorkflowRun) -> str:
        return str(self.path_for(run.workflowId, run.id).relative_to(self.layout.root))

    def save(self, run: WorkflowRun) -> None:
        data = json.dumps(run.to_dict(), indent=1, ensure_ascii=False).encode("utf-8")
        write_atomic(self.path_for(run.workflowId, run.id), data + b"\n")

    def load_path(self, path: Path) -> WorkflowRun:
        shown = (
            str(path.relative_to(self.layout.root)) if path.is_relative_to(self.layout.root) else str(path)
        )
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise RunNotFound(f"Run record {shown} does not exist", {"path": shown}) from None
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise RunUnreadable(
                f"Run record {shown} is not valid JSON ({exc}); it is left as it is",
                {"path": shown},
            ) from None
        return WorkflowRun.from_dict(data, shown)

    def load(self, workflow_id: str, run_id: str) -> WorkflowRun:
        return self.load_path(self.path_for(workflow_id, run_id))

    def record_paths(self, workflow_id: str | None = None) -> Iterator[Path]:
        base = self.layout.runs_dir
        if not base.is_dir():
            return
        folders = [base / workflow_id] if workflow_id else sorted(p for p in base.iterdir() if p.is_dir())
        for folder in folders:
            if folder.is_dir():
                yield from (p for p in folder.iterdir() if p.suffix == ".json" and not p.name.startswith("."))

    def list_runs(self, workflow_id: str | None = None) -> tuple[list[WorkflowRun], list[RunUnreadable]]:
        """Every readable run, newest first, and the records that could not be read."""
        runs: list[WorkflowRun] = []
        unreadable: list[RunUnreadable] = []
        for path in self.record_paths(workflow_id):
            try:
                runs.append(self.load_path(path))
            except RunUnreadable as exc:
                unreadable.append(exc)
        runs.sort(key=lambda r: (r.createdAt, r.id), reverse=True)
        return runs, unreadable

    def find(self, run_id_or_prefix: str, workflow_id: str | None = None) -> WorkflowRun:
        """A run by its ID or a unique prefix of it."""
        matches = [p for p in self.record_paths(workflow_id) if p.stem.startswith(run_id_or_prefix)]
        exact = [p for p in matches if p.stem == run_id_or_prefix]
        if exact:
            matches = exact
        if not matches:
            raise RunNotFound(
                f"No run matches '{run_id_or_prefix}'. List runs with: swamp workflow history",
                {"run": run_id_or_prefix},
            )
        if len(matches) > 1:
            ids = sorted(p.stem for p in matches)
            raise RunAmbiguous(
                f"'{run_id_or_prefix}' matches {len(ids)} runs; give more of the run ID",
                {"run": run_id_or_prefix, "runIds": ids},
            )
        return self.load_path(matches[0])
