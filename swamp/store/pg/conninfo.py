"""A store address as libpq reads it: its password found by libpq's own parser, and removed from
any text before it is shown (STORE-005, STORE-036).

Why libpq's parser: libpq decodes what it reads (`passwor%64=` is the keyword `password`,
`S3%43RET` is `S3CRET`), so a password can be spelt many ways; looking for the word misses some.
Why scrub every text, not only the address: libpq's messages quote what they could not read
(`invalid percent-encoded token: "S3CRET%ZZ"`) or the whole conninfo string. A secret is removed
in every spelling the address holds it (raw and percent-decoded). An address libpq cannot parse
has no known password: then everything between the scheme's `//` and the first `@` (the user
information), and every query value, is treated as secret.
"""

from __future__ import annotations

import ctypes
import re
from typing import Any
from urllib.parse import unquote

HIDDEN = "***"
_SCHEMES = ("postgresql://", "postgres://")


class _Option(ctypes.Structure):  # libpq's PQconninfoOption
    _fields_ = [
        ("keyword", ctypes.c_char_p),
        ("envvar", ctypes.c_char_p),
        ("compiled", ctypes.c_char_p),
        ("val", ctypes.c_char_p),
        ("label", ctypes.c_char_p),
        ("dispchar", ctypes.c_char_p),
        ("dispsize", ctypes.c_int),
    ]


def parse(address: str) -> tuple[dict[str, str] | None, str]:
    """The keywords libpq reads from `address` (decoded), or None and libpq's reason (not yet
    scrubbed: it may quote the password) when libpq cannot parse it."""
    from . import lean

    if lean.available():
        return _parse_lean(lean._libpq(), address)
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:  # neither driver: nothing connects, so nothing libpq says is shown
        return None, "no PostgreSQL driver is installed"
    try:
        return {k: str(v) for k, v in conninfo_to_dict(address).items() if v is not None}, ""
    except Exception as exc:  # psycopg.ProgrammingError: libpq cannot parse it
        return None, str(exc)


def _parse_lean(lib: Any, address: str) -> tuple[dict[str, str] | None, str]:
    if not getattr(lib, "_conninfo_ready", False):
        lib.PQconninfoParse.restype = ctypes.POINTER(_Option)
        lib.PQconninfoParse.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.PQconninfoFree.restype = None
        lib.PQconninfoFree.argtypes = [ctypes.POINTER(_Option)]
        lib.PQfreemem.restype = None
        lib.PQfreemem.argtypes = [ctypes.c_void_p]
        lib._conninfo_ready = True
    error = ctypes.c_void_p()
    try:
        raw = address.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None, "the address is not UTF-8 text"
    if b"\0" in raw:
        return None, "the address holds a NUL character"
    options = lib.PQconninfoParse(raw, ctypes.byref(error))
    reason = ""
    if error.value:
        reason = (ctypes.string_at(error.value) or b"").decode("utf-8", "replace").strip()
        lib.PQfreemem(error)
    if not options:
        return None, reason or "libpq cannot parse it"
    found: dict[str, str] = {}
    try:
        i = 0
        while options[i].keyword is not None:
            if options[i].val is not None:
                found[options[i].keyword.decode()] = options[i].val.decode("utf-8", "replace")
            i += 1
    finally:
        lib.PQconninfoFree(options)
    return found, ""


def _url_parts(address: str) -> tuple[str, list[tuple[str, str]]]:
    """A URL's user information (before the first `@` that comes before any `/`, as libpq reads
    it) and its query's raw (key, value) pairs."""
    rest = address.split("://", 1)[1] if "://" in address else ""
    head = re.match(r"[^@/]*@", rest)
    userinfo = head.group(0)[:-1] if head else ""
    query = rest.split("?", 1)[1] if "?" in rest else ""
    pairs = [tuple(p.split("=", 1)) if "=" in p else (p, "") for p in query.split("&") if p]
    return userinfo, pairs  # type: ignore[return-value]


class Conninfo:
    """One address: whether libpq can read it, its secrets, and how to show it or any text."""

    def __init__(self, address: str):
        self.address = address
        self.parsed, problem = parse(address)
        self.secrets = self._secrets()
        self.shown = self._shown()
        self.problem = " ".join(self.scrub(problem).split())  # why libpq cannot read it, fit to show

    @property
    def readable(self) -> bool:
        return self.parsed is not None

    @property
    def has_password(self) -> bool:
        return bool(self.parsed and self.parsed.get("password"))

    def _secrets(self) -> list[str]:
        found: set[str] = set()
        password = (self.parsed or {}).get("password")
        if password:
            found.add(password)
        if self.address.startswith(_SCHEMES):
            userinfo, pairs = _url_parts(self.address)
            user, _, raw_password = userinfo.partition(":")
            if self.parsed is None:  # nothing known: the user information and every query value
                found.update([userinfo, user, raw_password, *(v for _, v in pairs)])
            else:
                found.add(raw_password)
                found.update(v for k, v in pairs if unquote(k) == "password")
        elif password is None and self.parsed is None:
            keyword = re.finditer(r"password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", self.address)
            found.update(m.group(1) for m in keyword)
        spelt = set(found) | {unquote(s) for s in found}
        return sorted((s for s in spelt if s), key=len, reverse=True)

    def _shown(self) -> str:
        shown = self.address
        if self.parsed is None and shown.startswith(_SCHEMES):
            scheme, rest = shown.split("://", 1)
            userinfo, _ = _url_parts(shown)
            if userinfo:
                shown = f"{scheme}://{HIDDEN}@{rest[len(userinfo) + 1 :]}"
        return self.scrub(shown)

    def scrub(self, text: str) -> str:
        """`text` with every spelling of the address's password (or, for an address libpq cannot
        read, of its user information and query values) replaced by ***."""
        for secret in self.secrets:
            text = text.replace(secret, HIDDEN)
        return text


def refuse_password_setting(address: str) -> None:
    """`store:` in .swamp.yaml holding a password in any spelling libpq reads (`passwor%64=`, a
    URL's `user:password@`, a `password` keyword after a tab) is settings_invalid (STORE-002)."""
    from ...domain.settings import SettingsInvalid

    if Conninfo(address).has_password:
        raise SettingsInvalid(
            ".swamp.yaml: store holds a password (libpq reads one from it); remove it, and put it in "
            "PGPASSWORD, ~/.pgpass or the libpq service file instead",
            {"path": ".swamp.yaml", "key": "store"},
        )
