"""Safe YAML reading: no custom tags, no alias bombs."""

from __future__ import annotations

from typing import Any

import yaml

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    _Loader = yaml.SafeLoader

MAX_ALIASES = 100


class YamlError(ValueError):
    pass


def load_yaml(text: str) -> Any:
    if text.count("*") and _alias_count(text) > MAX_ALIASES:
        raise YamlError(f"too many YAML aliases (more than {MAX_ALIASES}); expand them in the file")
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise YamlError(str(exc).replace("\n", " ")) from None


def _alias_count(text: str) -> int:
    try:
        return sum(1 for event in yaml.parse(text, Loader=_Loader) if isinstance(event, yaml.AliasEvent))
    except yaml.YAMLError:
        return 0


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
