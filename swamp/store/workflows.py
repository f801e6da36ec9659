"""The workflow repository: workflows/workflow-<name>.yaml, looked up by name, then by id."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..domain.definition import Workflow, parse_workflow
from ..domain.errors import WorkflowExists, WorkflowInvalid, WorkflowNotFound
from .files import write_atomic
from .repo import RepoLayout
from .yamlio import YamlError, load_yaml


@dataclass(frozen=True)
class LoadedWorkflow:
    workflow: Workflow
    path: Path
    raw: dict[str, Any]


@dataclass(frozen=True)
class BrokenWorkflow:
    path: Path
    error: WorkflowInvalid


def _renamed(shown: str) -> str:
    folder, _, name = shown.rpartition("/")
    return f"{folder}/workflow-{name}" if folder else f"workflow-{name}"


@functools.lru_cache(maxsize=128)
def _parsed(shown: str, text: str) -> tuple[Workflow, dict[str, Any]]:
    """A workflow file's text parsed, once per text: a long-lived process (serve continuing runs)
    reads the file each time, and parses it again only when it changed. The result is shared by
    every caller: the Workflow is frozen, and `raw` must not be changed."""
    try:
        raw = load_yaml(text)
    except YamlError as exc:
        message = f"{shown} is not valid YAML: {exc}"  # the file, then `line L, column C: ...`
        raise WorkflowInvalid(message, {"path": shown, "problems": [message]}) from None
    return parse_workflow(raw, shown), raw


class WorkflowRepository:
    def __init__(self, layout: RepoLayout):
        self.layout = layout

    def _relative(self, path: Path) -> str:
        return str(path.relative_to(self.layout.root))

    def load_file(self, path: Path) -> LoadedWorkflow:
        shown = self._relative(path)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            message = f"{shown} is not valid YAML: {exc}"
            raise WorkflowInvalid(message, {"path": shown, "problems": [message]}) from None
        workflow, raw = _parsed(shown, text)
        return LoadedWorkflow(workflow, path, raw)

    def files(self) -> list[Path]:
        folder = self.layout.workflows_dir
        if not folder.is_dir():
            return []
        return sorted(folder.glob("workflow-*.yaml")) + sorted(folder.glob("workflow-*.yml"))

    def scan(self) -> tuple[list[LoadedWorkflow], list[BrokenWorkflow]]:
        loaded: list[LoadedWorkflow] = []
        broken: list[BrokenWorkflow] = []
        for path in self.files():
            try:
                loaded.append(self.load_file(path))
            except WorkflowInvalid as exc:
                broken.append(BrokenWorkflow(path, exc))
        return loaded, broken

    def get(self, name_or_id: str) -> LoadedWorkflow:
        direct = self.layout.workflow_file(name_or_id)
        if "/" not in name_or_id and direct.is_file():
            try:
                found = self.load_file(direct)
            except WorkflowInvalid:
                found = None
            if found is not None and found.workflow.name == name_or_id:
                return found  # the usual case, without reading every file
        loaded, broken = self.scan()
        for item in loaded:
            if item.workflow.name == name_or_id:
                return item
        for item in loaded:
            if item.workflow.id == name_or_id:
                return item
        for bad in broken:
            if bad.path.stem == f"workflow-{name_or_id}":
                raise bad.error
        known = ", ".join(sorted(i.workflow.name for i in loaded)) or "none"
        misnamed = self.misnamed()
        hint = ""
        if len(misnamed) == 1:
            hint = (
                f" Workflow files must be named workflows/workflow-<name>.yaml, so {misnamed[0]} is not read:"
                f" rename it to {_renamed(misnamed[0])}."
            )
        elif misnamed:
            hint = (
                " Workflow files must be named workflows/workflow-<name>.yaml, so these are not read:"
                f" {', '.join(misnamed)}; rename each to workflows/workflow-<its name>.yaml."
            )
        raise WorkflowNotFound(
            f"Workflow '{name_or_id}' not found (known: {known}).{hint} List them with: swamp workflow list",
            {"workflow": name_or_id, **({"misnamed": misnamed} if misnamed else {})},
        )

    def misnamed(self) -> list[str]:
        """YAML files in workflows/ that are not read because their name lacks `workflow-` (WF-043)."""
        folder = self.layout.workflows_dir
        if not folder.is_dir():
            return []
        found = [p for pattern in ("*.yaml", "*.yml") for p in folder.glob(pattern) if p.is_file()]
        return sorted(self._relative(p) for p in found if not p.name.startswith("workflow-"))

    def create(self, name: str, text: str) -> Path:
        path = self.layout.workflow_file(name)
        if path.exists():
            raise WorkflowExists(
                f"Workflow '{name}' already exists at {self._relative(path)}", {"path": self._relative(path)}
            )
        write_atomic(path, text.encode("utf-8"))
        return path
