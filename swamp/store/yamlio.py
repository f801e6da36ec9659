"""Safe YAML reading: no custom tags, no alias bombs."""

from __future__ import annotations

from typing import Any

import yaml

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_ALIASES = 100
MAX_NODES = 200_000  # after aliases are expanded: a workflow file is far smaller


class YamlError(ValueError):
    pass


class _StrictLoader(_Base):  # type: ignore[misc,valid-type]
    """Safe loading that refuses a mapping repeating a key (the last one would silently win)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)  # resolve `<<` merge keys first, as the base loader does
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:
                continue  # an unhashable key: the base constructor reports it
            if repeated:
                mark = key_node.start_mark
                raise YamlError(f"line {mark.line + 1}: the key {key!r} appears twice in one mapping")
            seen.add(key)
        return super().construct_mapping(node, deep)


def load_yaml(text: str) -> Any:
    aliases = _alias_count(text) if "*" in text else 0
    if aliases > MAX_ALIASES:
        raise YamlError(f"too many YAML aliases (more than {MAX_ALIASES}); expand them in the file")
    try:
        value = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a safe loader
        if aliases and _expanded_size(value, {}) > MAX_NODES:
            raise YamlError(
                f"the YAML aliases expand to more than {MAX_NODES} values; expand them in the file"
            )
    except yaml.YAMLError as exc:
        raise YamlError(str(exc).replace("\n", " ")) from None
    except RecursionError:
        raise YamlError("the YAML is nested too deeply; flatten it") from None
    return value


_MEASURING = -1  # the size of a node whose children are being measured


def _expanded_size(value: Any, memo: dict[int, int]) -> int:
    """How many values the document holds once every alias is written out (a shared node counts
    each time it is used, but is measured once). A node that holds itself (an anchor used inside
    its own node) would be infinite: every reader after this one would recurse without end."""
    if not isinstance(value, (dict, list)):
        return 1
    key = id(value)
    size = memo.get(key)
    if size is None:
        memo[key] = _MEASURING
        children = value.values() if isinstance(value, dict) else value
        size = memo[key] = 1 + sum(_expanded_size(child, memo) for child in children)
    elif size == _MEASURING:
        raise YamlError("a YAML alias is used inside the node its anchor names (a node that holds itself)")
    return size


def _alias_count(text: str) -> int:
    try:
        return sum(1 for event in yaml.parse(text, Loader=_Base) if isinstance(event, yaml.AliasEvent))
    except yaml.YAMLError:
        return 0


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
