"""Workflow files, model definitions and input files are YAML 1.2 with the core schema (WF-030..033),
read safely: no tags beyond the core ones, no alias bombs, no repeated keys.

PyYAML speaks YAML 1.1, where `yes`, `on` and `off` are booleans, `2026-01-01` is a date, `017` is
octal, `1:30` is ninety and `<<` merges mappings. Another implementation (Go's yaml.v3, the
`yaml` package of TypeScript) reads the same file by 1.2 rules, so the loader here replaces
PyYAML's implicit resolvers and constructors with the core schema's: a plain scalar is null, a
boolean, an integer or a float only when it matches the core schema's patterns, and a string
otherwise. The dumper quotes any string that either version would read as something else.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_NULL, _BOOL, _INT, _FLOAT, _STR, _SEQ, _MAP = (
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "str", "seq", "map")
)

# The YAML 1.2.2 core schema (section 10.3.2), exactly.
CORE_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
CORE_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
CORE_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
CORE_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


def _core_resolvers() -> dict[Any, list[tuple[str, re.Pattern[str]]]]:
    table: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}
    for tag, pattern, first in (
        (_NULL, CORE_NULL, ["~", "n", "N", ""]),
        (_BOOL, CORE_BOOL, list("tTfF")),
        (_INT, CORE_INT, list("-+0123456789")),
        (_FLOAT, CORE_FLOAT, list("-+.0123456789")),
    ):
        for char in first:
            table.setdefault(char, []).append((tag, pattern))
    return table


def _construct_null(loader: Any, node: Any) -> None:
    loader.construct_scalar(node)


def _construct_bool(loader: Any, node: Any) -> bool:
    value = loader.construct_scalar(node)
    if not CORE_BOOL.match(value):
        raise yaml.constructor.ConstructorError(None, None, f"{value!r} is not a boolean", node.start_mark)
    return bool(value.lower() == "true")


def _construct_int(loader: Any, node: Any) -> int:
    value = loader.construct_scalar(node)
    if not CORE_INT.match(value):
        raise yaml.constructor.ConstructorError(None, None, f"{value!r} is not an integer", node.start_mark)
    if value.startswith("0o"):
        return int(value[2:], 8)
    if value.startswith("0x"):
        return int(value[2:], 16)
    return int(value, 10)  # `017` is seventeen: YAML 1.2 has no leading-zero octal


def _construct_float(loader: Any, node: Any) -> float:
    value = loader.construct_scalar(node)
    if not CORE_FLOAT.match(value) and not CORE_INT.match(value):
        raise yaml.constructor.ConstructorError(None, None, f"{value!r} is not a float", node.start_mark)
    lowered = value.lower()
    if lowered.endswith(".inf"):
        return float("-inf") if lowered.startswith("-") else float("inf")
    if lowered == ".nan":
        return float("nan")
    return float(_construct_int(loader, node)) if CORE_INT.match(value) else float(value)


def _refuse_tag(loader: Any, node: Any) -> None:
    raise yaml.constructor.ConstructorError(
        None, None, f"the tag {node.tag!r} is not one of YAML 1.2's core schema", node.start_mark
    )


MAX_ALIASES = 100
MAX_NODES = 200_000  # after aliases are expanded: a workflow file is far smaller


class YamlError(ValueError):
    pass


class _StrictLoader(_Base):  # type: ignore[misc,valid-type,unused-ignore]
    """YAML 1.2 core schema loading that refuses a mapping repeating a key (the last one would
    silently win). `<<` is an ordinary key: YAML 1.2 has no merge keys."""

    yaml_implicit_resolvers = _core_resolvers()
    yaml_constructors = {
        _NULL: _construct_null,
        _BOOL: _construct_bool,
        _INT: _construct_int,
        _FLOAT: _construct_float,
        _STR: _Base.construct_yaml_str,
        _SEQ: _Base.construct_yaml_seq,
        _MAP: _Base.construct_yaml_map,
        None: _refuse_tag,
    }

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
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
        return yaml.constructor.BaseConstructor.construct_mapping(self, node, deep)


def _in_words(exc: yaml.YAMLError) -> str:
    """A PyYAML error as `line L, column C: what is wrong` (1-based, where PyYAML says where),
    the commonest cause of `mapping values are not allowed` spelled out with its fix (WF-044)."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return str(exc).replace("\n", " ")
    mark = exc.problem_mark or exc.context_mark
    problem = (exc.problem or exc.context or "not valid YAML").strip()
    if problem.startswith("mapping values are not allowed"):
        problem = (
            "': ' inside a plain (unquoted) value starts a mapping there; quote the whole value"
            " ('...', with each ' in it doubled) or write it as a block scalar: `key: |` with the text"
            " on the next lines, indented"
        )
    elif "found character '\\t'" in problem or "found character '\t'" in problem:
        problem = "a tab character: YAML indents with spaces only"
    elif exc.context and exc.problem and exc.context_mark is not None:
        context = exc.context_mark
        problem = f"{problem} ({exc.context} at line {context.line + 1}, column {context.column + 1})"
    if mark is None:
        return problem
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


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
        raise YamlError(_in_words(exc)) from None
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


class _Dumper(yaml.SafeDumper):
    """Quotes a string that YAML 1.1 or 1.2 would read as anything but that string (`yes`, `0o17`)."""


_Dumper.yaml_implicit_resolvers = {
    char: [*yaml.SafeDumper.yaml_implicit_resolvers.get(char, []), *core]
    for char, core in {
        **dict.fromkeys(yaml.SafeDumper.yaml_implicit_resolvers, []),
        **_core_resolvers(),
    }.items()
}


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
