"""Following a local `$ref` of a JSON Schema: the JSON Pointer tokens after `#`, each unescaped
(`~1` is `/`, `~0` is `~`), through mappings and lists."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

MISSING: Any = object()  # what a pointer that leads nowhere gives


def pointer_target(root: Any, tokens: Iterable[str]) -> Any:
    """What the escaped `tokens` point at in `root`, or MISSING."""
    node = root
    for token in tokens:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return MISSING
    return node
