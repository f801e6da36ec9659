"""Topological levels: every node of a level depends only on nodes of earlier levels.

Inside a level nodes are ordered by weight, then name. A level starts only when the whole previous
level is done (the engine's barrier), so this order is also the execution order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .errors import WorkflowInvalid


@dataclass(frozen=True)
class Node:
    name: str
    weight: float = 0
    depends_on: tuple[str, ...] = field(default_factory=tuple)


def duplicate_names(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    dups: list[str] = []
    for name in names:
        if name in seen and name not in dups:
            dups.append(name)
        seen.add(name)
    return dups


def find_cycle(nodes: Sequence[Node]) -> list[str] | None:
    """A dependency cycle as a path `a -> b -> a`, or None. Unknown references are ignored."""
    deps = {n.name: list(n.depends_on) for n in nodes}
    known = set(deps)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        stack.append(name)
        for dep in deps[name]:
            if dep not in known:
                continue
            if state.get(dep) == 1:
                return stack[stack.index(dep) :] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[name] = 2
        return None

    for node in sorted(nodes, key=lambda n: n.name):
        if node.name not in state:
            found = visit(node.name)
            if found:
                return found
    return None


def topological_levels(nodes: Sequence[Node]) -> list[list[Node]]:
    """Kahn's algorithm by levels. Raises WorkflowInvalid on duplicates or a cycle."""
    dups = duplicate_names(n.name for n in nodes)
    if dups:
        raise WorkflowInvalid(f"Duplicate node names: {', '.join(dups)}")
    known = {n.name for n in nodes}
    remaining = {n.name: n for n in nodes}
    done: set[str] = set()
    levels: list[list[Node]] = []
    while remaining:
        ready = [n for n in remaining.values() if all(d in done or d not in known for d in n.depends_on)]
        if not ready:
            cycle = find_cycle(list(remaining.values())) or sorted(remaining)
            raise WorkflowInvalid(f"Cyclic dependency detected: {' -> '.join(cycle)}")
        ready.sort(key=lambda n: (n.weight, n.name))
        levels.append(ready)
        for n in ready:
            done.add(n.name)
            del remaining[n.name]
    return levels
