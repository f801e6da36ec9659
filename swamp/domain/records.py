"""Strict reading and plain writing of the run record's parts (plain dataclasses, no framework).

Every part declares how each field is read (`FIELDS`). Reading refuses unknown fields, wrong types
and values outside a closed set with a RecordError naming the path, so a record from a newer swamp
is refused rather than half-understood. Writing leaves out fields that are None.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from typing import Any, ClassVar, Protocol, TypeVar

Reader = Callable[[Any, str], Any]
R = TypeVar("R", bound="Record")


class RecordError(ValueError):
    pass


class Record(Protocol):
    FIELDS: ClassVar[dict[str, Reader]]


def _kind(expected: type | tuple[type, ...], label: str) -> Reader:
    def read(value: Any, path: str) -> Any:
        if isinstance(value, bool) and bool not in (expected if isinstance(expected, tuple) else (expected,)):
            raise RecordError(f"{path}: expected {label}, got a boolean")
        if not isinstance(value, expected):
            raise RecordError(f"{path}: expected {label}, got {type(value).__name__}")
        return value

    return read


STR = _kind(str, "a string")
INT = _kind(int, "an integer")
NUMBER = _kind((int, float), "a number")
BOOL = _kind(bool, "a boolean")
OBJECT = _kind(dict, "an object")


def ANY(value: Any, path: str) -> Any:  # noqa: N802 - reads like the other readers
    return value


def one_of(allowed: Collection[str], what: str) -> Reader:
    def read(value: Any, path: str) -> Any:
        if value not in allowed:
            raise RecordError(
                f"{path}: unknown {what} {value!r} (this swamp knows {', '.join(sorted(allowed))})"
            )
        return value

    return read


def optional(reader: Reader) -> Reader:
    def read(value: Any, path: str) -> Any:
        return None if value is None else reader(value, path)

    return read


def list_of(reader: Reader) -> Reader:
    def read(value: Any, path: str) -> Any:
        if not isinstance(value, list):
            raise RecordError(f"{path}: expected a list, got {type(value).__name__}")
        return [reader(item, f"{path}[{i}]") for i, item in enumerate(value)]

    return read


def map_of(reader: Reader) -> Reader:
    def read(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise RecordError(f"{path}: expected an object, got {type(value).__name__}")
        return {str(k): reader(v, f"{path}.{k}") for k, v in value.items()}

    return read


def nested(cls: type[Any]) -> Reader:
    def read(value: Any, path: str) -> Any:
        return read_record(cls, value, path)

    return read


def read_record(cls: type[R], data: Any, path: str) -> R:
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected an object, got {type(data).__name__}")
    unknown = [k for k in data if k not in cls.FIELDS]
    if unknown:
        raise RecordError(f"{path}: unknown field(s) {', '.join(map(repr, unknown))}")
    values = {}
    for name, reader in cls.FIELDS.items():
        if name in data:
            values[name] = reader(data[name], f"{path}.{name}")
    try:
        return cls(**values)
    except TypeError as exc:  # a required field is missing
        raise RecordError(f"{path}: {exc}") from None


def write_record(record: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in _field_names(type(record)):
        value = getattr(record, name)
        if value is None:
            continue
        out[name] = _plain(value)
    return out


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        # A field marked transient is state kept in memory only (never written nor read).
        fields = dataclasses.fields(cls)
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields if not f.metadata.get("transient"))
    return names


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(type(value), "__dataclass_fields__"):
        return write_record(value)
    return value
