"""The schemas every JSON document a scenario sees is validated against (spec/schemas/).

`index.json` in the schemas folder says which schema applies to what: `frame` to every JSON-lines
frame, `errorDocument` to the `--json` output of a refused command, `commands` to the `--json`
output of each command, `files` to files under the repository matching a glob. Every
`*.schema.json` of the folder is loaded into one registry keyed by its file name (and its `$id`),
so schemas `$ref` each other by relative file name (`results.schema.json#/$defs/workflow.run`).
Without an index (an old schemas folder, or `--frame-schema` pointing at a lone file) only frames
are validated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from .globbing import matches

INDEX = "index.json"
FRAME_KINDS = ("event", "error", "done")  # any other frame type is a result


class SchemaSetupError(Exception):
    """The schemas folder cannot be used (unreadable, not JSON, an index naming a missing schema)."""


@dataclass
class Schemas:
    registry: Registry  # type: ignore[type-arg]
    frame: str  # the reference of the frame schema, e.g. "frame.schema.json"
    error_document: str | None = None
    commands: dict[str, str] = field(default_factory=dict)
    files: list[tuple[str, str]] = field(default_factory=list)  # (glob, ref)
    _validators: dict[str, jsonschema.Draft202012Validator] = field(default_factory=dict)

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls, directory: Path, frame_file: Path | None = None) -> Schemas:
        """Every *.schema.json of `directory`, and its index.json when there is one. `frame_file`
        (the old --frame-schema) replaces the index's frame schema."""
        pairs: list[tuple[str, Resource[Any]]] = []
        for path in sorted(directory.glob("*.schema.json")):
            pairs += _resource_pairs(path.name, _read_json(path))
        frame = "frame.schema.json"
        if frame_file is not None:
            frame = "--frame-schema"
            pairs += _resource_pairs(frame, _read_json(frame_file))
        registry = Registry().with_resources(pairs)  # type: ignore[var-annotated]
        schemas = cls(registry=registry, frame=frame)
        index_path = directory / INDEX
        if index_path.exists():
            index = _read_json(index_path)
            if frame_file is None:
                schemas.frame = index.get("frame", frame)
            schemas.error_document = index.get("errorDocument")
            schemas.commands = dict(index.get("commands", {}))
            for entry in index.get("files", []):
                schemas.files.append((entry["glob"], entry["schema"]))
            for ref in [schemas.frame, schemas.error_document, *schemas.commands.values()]:
                if ref is not None:
                    schemas.validator(ref)  # a reference to nothing is a setup error, found now
            for _, ref in schemas.files:
                schemas.validator(ref)
        else:
            schemas.validator(schemas.frame)
        return schemas

    @classmethod
    def from_frame_schema(cls, schema: dict[str, Any]) -> Schemas:
        """A lone frame schema (no other schemas, no index): frames are all that is validated."""
        registry = Registry().with_resources(_resource_pairs("--frame-schema", schema))  # type: ignore[var-annotated]
        return cls(registry=registry, frame="--frame-schema")

    def validator(self, ref: str) -> jsonschema.Draft202012Validator:
        found = self._validators.get(ref)
        if found is None:
            found = jsonschema.Draft202012Validator({"$ref": ref}, registry=self.registry)
            try:
                self.registry.resolver().lookup(ref)
            except Exception as exc:  # referencing's Unresolvable and friends
                raise SchemaSetupError(
                    f"the schema {ref!r} cannot be found ({type(exc).__name__}: {exc})"
                ) from None
            self._validators[ref] = found
        return found

    # ------------------------------------------------------------------ what applies

    def command_key(self, args: list[str]) -> str | None:
        """The `commands` key of a command line: the longest run of its words (not options) that
        is a key, the leftmost such run first (`--repo-dir one workflow list` is `workflow list`)."""
        words = [a for a in args if not a.startswith("-")]
        for start in range(len(words)):
            for end in range(len(words), start, -1):
                key = " ".join(words[start:end])
                if key in self.commands:
                    return key
        return None

    def file_schema(self, rel_path: str) -> str | None:
        for pattern, ref in self.files:
            if matches(pattern, rel_path):
                return ref
        return None

    # ------------------------------------------------------------------ checking

    def problem(self, document: Any, ref: str) -> str | None:
        """None when `document` passes schema `ref`; otherwise the error and where it is."""
        found = self._error(document, ref)
        return None if found is None else f"{found[0]} (at {found[1] or '/'})"

    def frame_problem(self, frame: Any) -> str | None:
        """None when the frame passes the frame schema; otherwise what does not, checked against
        the narrowest schema that applies (a result's data against its request type's document,
        an event against its kind's, an error against the error body)."""
        found = self._error(frame, self.frame)
        if found is None:
            return None
        narrow = self._narrow(frame) if isinstance(frame, dict) else None
        if narrow is not None:
            return narrow
        return f"{found[0]} (at {found[1] or '/'})"

    def _narrow(self, frame: dict[str, Any]) -> str | None:
        kind = frame.get("type")
        parts: list[tuple[str, Any, str]] = []
        if kind == "event":
            parts.append(("/event", frame.get("event"), "events.schema.json#/$defs/event"))
        elif kind == "error":
            parts.append(("/error", frame.get("error"), "errors.schema.json#/$defs/errorBody"))
        elif isinstance(kind, str):
            payload = frame.get("payload")
            data = payload.get("data") if isinstance(payload, dict) else None
            parts.append(("/payload/data", data, f"results.schema.json#/$defs/{kind}"))
        definition = kind if kind in FRAME_KINDS else "result"
        parts.append(("", frame, f"{self.frame.split('#')[0]}#/$defs/{definition}"))
        for prefix, document, ref in parts:
            if document is None or not self._resolvable(ref):
                continue
            found = self._error(document, ref)
            if found is not None:
                return f"{found[0]} (at {(prefix + found[1]) or '/'}, checked as {ref})"
        return None

    def _error(self, document: Any, ref: str) -> tuple[str, str] | None:
        validator = self.validator(ref)
        if validator.is_valid(document):
            return None
        error = jsonschema.exceptions.best_match(validator.iter_errors(document))
        return error.message, "".join(f"/{p}" for p in error.absolute_path)

    def _resolvable(self, ref: str) -> bool:
        try:
            self.validator(ref)
        except SchemaSetupError:
            return False
        return True


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SchemaSetupError(f"cannot load {path}: {exc}") from None


def _resource_pairs(name: str, contents: Any) -> list[tuple[str, Resource[Any]]]:
    resource = DRAFT202012.create_resource(contents)
    pairs = [(name, resource)]
    given = contents.get("$id") if isinstance(contents, dict) else None
    if isinstance(given, str) and given != name:
        pairs.append((given, resource))
    return pairs
