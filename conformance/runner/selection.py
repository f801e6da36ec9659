"""Choosing scenarios by exact ID, by folder, and leaving some out (conformance/FORMAT.md §2).

The Node runner (conformance/node/run.mjs, `selectScenarios`) follows the same rules:

- `--id ID` (repeatable, or a comma list) chooses the scenario whose `id` is exactly ID;
- `--folder DIR` (repeatable, or a comma list) chooses every scenario whose file is under DIR
  (a path under conformance/scenarios/, such as `waits` or `_selftest`);
- without either, every scenario is chosen;
- `--exclude X` (repeatable, or a comma list) then leaves out the scenario whose id is X and every
  scenario under the folder X.

A name that matches no scenario is a usage error, so a typing error never selects nothing quietly.
Features still apply to what is chosen: a chosen scenario needing a feature not selected is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def split_values(values: Iterable[str] | None) -> tuple[str, ...]:
    """Repeated options and comma lists, flattened; empty items dropped."""
    out: list[str] = []
    for value in values or ():
        out += [item.strip() for item in value.split(",") if item.strip()]
    return tuple(out)


def _under(file: str, folder: str) -> bool:
    folder = folder.strip("/")
    return bool(folder) and file.startswith(folder + "/")


@dataclass(frozen=True)
class Selection:
    ids: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.ids or self.folders or self.excludes)

    def chooses(self, scenario_id: str, file: str) -> bool:
        """`file` is the scenario's path under conformance/scenarios/ (POSIX)."""
        named = scenario_id in self.ids or any(_under(file, f) for f in self.folders)
        if (self.ids or self.folders) and not named:
            return False
        return not any(x == scenario_id or _under(file, x) for x in self.excludes)

    def unknown(self, scenarios: Iterable[tuple[str, str]]) -> list[str]:
        """Each name given that matches none of `scenarios` ((id, file) pairs)."""
        pairs = list(scenarios)
        ids = {sid for sid, _ in pairs}
        problems = [f"--id {i}: no scenario has this id" for i in self.ids if i not in ids]
        problems += [
            f"--folder {f}: no scenario is under this folder"
            for f in self.folders
            if not any(_under(file, f) for _, file in pairs)
        ]
        problems += [
            f"--exclude {x}: no scenario has this id or is under this folder"
            for x in self.excludes
            if x not in ids and not any(_under(file, x) for _, file in pairs)
        ]
        return problems
