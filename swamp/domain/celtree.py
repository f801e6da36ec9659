"""The syntax tree of a compiled CEL expression, for checks that look at what an expression reads.

The CEL library gives its parse tree only as a serialized protocol buffer (`Expression.serialize`:
a `google.protobuf.Any` holding a `cel.expr.CheckedExpr`, or a `cel.expr.ParsedExpr` when the
expression was compiled without the type checker). This module reads the few messages of
`cel/expr/syntax.proto` that a tree needs straight from the wire format, so that no protobuf
runtime is needed and the tree is exactly the one CEL evaluates (macros expanded: `has(a.b)` is a
test-only select, `exists`/`all`/`map` are comprehensions). Unknown fields are skipped, as the
wire format allows.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import ExpressionError


@dataclass(frozen=True)
class Node:
    """One CEL expression node.

    kind: `ident` (name), `select` (operand in children[0], name = the field, test_only for
    `has()`), `call` (name = the function, e.g. `_==_`, `_[_]`, `_&&_`; target first in children
    when has_target), `const` (value), or `other` (lists, maps, messages, comprehensions: only
    their children).
    """

    kind: str
    name: str = ""
    children: tuple[Node, ...] = ()
    test_only: bool = False
    has_target: bool = False
    value: str | int | float | bool | None = None

    def walk(self) -> Iterator[Node]:
        """This node and every node below it, parents first."""
        yield self
        for child in self.children:
            yield from child.walk()


# Field numbers of cel/expr/syntax.proto and checked.proto.
_ANY_VALUE = 2
_CHECKED_EXPR, _PARSED_EXPR = 4, 2
_CONST, _IDENT, _SELECT, _CALL, _LIST, _STRUCT, _COMPREHENSION = 3, 4, 5, 6, 7, 8, 9
_MAX_DEPTH = 500


def tree_of(serialized: bytes) -> Node:
    """The tree of an `Expression.serialize()` result."""
    try:
        envelope = _fields(serialized)
        type_url = next((bytes(v) for n, v in envelope if n == 1 and isinstance(v, memoryview)), b"")
        message = next(v for n, v in envelope if n == _ANY_VALUE and isinstance(v, memoryview))
        number = _PARSED_EXPR if type_url.endswith(b".ParsedExpr") else _CHECKED_EXPR
        expr = next(v for n, v in _fields(message) if n == number and isinstance(v, memoryview))
        return _expr(expr, 0)
    except (StopIteration, IndexError, ValueError, UnicodeDecodeError, struct.error):
        raise ExpressionError("the compiled expression could not be read") from None


def _expr(data: memoryview, depth: int) -> Node:
    if depth > _MAX_DEPTH:
        raise ValueError("too deep")
    for number, value in _fields(data):
        if not isinstance(value, memoryview):
            continue
        if number == _IDENT:
            return Node("ident", name=_string(value, 1))
        if number == _SELECT:
            parts = _fields(value)
            operand = [_expr(v, depth + 1) for n, v in parts if n == 1 and isinstance(v, memoryview)]
            test_only = any(n == 3 and v == 1 for n, v in parts)
            return Node("select", name=_string(value, 2), children=tuple(operand), test_only=test_only)
        if number == _CALL:
            parts = _fields(value)
            target = [_expr(v, depth + 1) for n, v in parts if n == 1 and isinstance(v, memoryview)]
            args = [_expr(v, depth + 1) for n, v in parts if n == 3 and isinstance(v, memoryview)]
            return Node("call", name=_string(value, 2), children=(*target, *args), has_target=bool(target))
        if number == _CONST:
            return Node("const", value=_constant(value))
        if number == _LIST:
            return Node("other", children=tuple(_exprs(value, (1,), depth)))
        if number == _STRUCT:
            entries = [v for n, v in _fields(value) if n == 2 and isinstance(v, memoryview)]
            return Node("other", children=tuple(c for e in entries for c in _exprs(e, (3, 4), depth)))
        if number == _COMPREHENSION:
            return Node("other", children=tuple(_exprs(value, (2, 4, 5, 6, 7), depth)))
    return Node("other")


def _exprs(data: memoryview, numbers: tuple[int, ...], depth: int) -> list[Node]:
    """The Expr fields `numbers` of a message, in wire order."""
    return [_expr(v, depth + 1) for n, v in _fields(data) if n in numbers and isinstance(v, memoryview)]


def _constant(data: memoryview) -> str | int | float | bool | None:
    for number, value in _fields(data):
        if number == 6 and isinstance(value, memoryview):
            return bytes(value).decode("utf-8")
        if number == 3 and isinstance(value, int):
            return value - (1 << 64) if value >= 1 << 63 else value
        if number == 4 and isinstance(value, int):
            return value
        if number == 2 and isinstance(value, int):
            return bool(value)
        if number == 5 and isinstance(value, float):
            return value
    return None


def _string(data: memoryview, number: int) -> str:
    for n, value in _fields(data):
        if n == number and isinstance(value, memoryview):
            return bytes(value).decode("utf-8")
    return ""


def _fields(data: memoryview | bytes) -> list[tuple[int, int | float | memoryview]]:
    """(field number, value) of every field of one message: varints as int, 64-bit as float,
    length-delimited as a view. ValueError when the bytes are not a message."""
    view = memoryview(data)
    out: list[tuple[int, int | float | memoryview]] = []
    position = 0
    while position < len(view):
        key, position = _varint(view, position)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field 0")
        if wire == 0:
            value, position = _varint(view, position)
            out.append((number, value))
        elif wire == 1:
            out.append((number, struct.unpack_from("<d", view, position)[0]))
            position += 8
        elif wire == 2:
            size, position = _varint(view, position)
            if position + size > len(view):
                raise ValueError("truncated")
            out.append((number, view[position : position + size]))
            position += size
        elif wire == 5:
            position += 4
        else:
            raise ValueError(f"wire type {wire}")
    if position != len(view):
        raise ValueError("truncated")
    return out


def _varint(view: memoryview, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = view[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")
