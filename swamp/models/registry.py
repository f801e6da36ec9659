"""Model types (builtin and Python extensions) and model definitions (models/<type>/<name>.yaml).

Extensions are imported lazily, the first time a type is looked up that is not builtin. A broken
extension file is reported with its path and the error; it breaks no workflow that does not use it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..domain.errors import ModelExists, ModelInvalid, ModelNotFound
from ..store.files import write_atomic
from ..store.repo import RepoLayout
from ..store.yamlio import YamlError, dump_yaml, load_yaml
from .shell import SHELL
from .types import Method, ModelType

TYPE_NAME = re.compile(r"^(@[a-z0-9_-]+/)?[a-z0-9_-]+(/[a-z0-9_-]+)*$")
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class ExtensionProblem:
    path: str
    error: str


@dataclass(frozen=True)
class ModelDefinition:
    id: str
    name: str
    type: str
    global_arguments: dict[str, Any]
    method_arguments: dict[str, dict[str, Any]]
    path: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "globalArguments": self.global_arguments,
            "methods": {m: {"arguments": a} for m, a in self.method_arguments.items()},
            "path": self.path,
        }


class ModelTypeRegistry:
    def __init__(self, layout: RepoLayout):
        self.layout = layout
        self._types: dict[str, ModelType] = {SHELL.type: SHELL}
        self._problems: list[ExtensionProblem] = []
        self._loaded = False
        self._lock = threading.Lock()

    def _load_extensions(self) -> None:
        with self._lock:
            if self._loaded:
                return
            folder = self.layout.extensions_dir
            files = sorted(folder.glob("*.py")) if folder.is_dir() else []
            for path in files:
                if path.name.startswith("_") or path.name.endswith("_test.py"):
                    continue
                try:
                    model_type = _import_extension(path, self.layout.root)
                except (Exception, SystemExit) as exc:  # user code: any failure is reported, not raised
                    self._problems.append(
                        ExtensionProblem(str(path.relative_to(self.layout.root)), _describe(exc))
                    )
                    continue
                if model_type.type in self._types:
                    self._problems.append(
                        ExtensionProblem(
                            model_type.source, f"model type '{model_type.type}' is already defined"
                        )
                    )
                    continue
                self._types[model_type.type] = model_type
            self._loaded = True

    def get(self, type_name: str) -> ModelType:
        if type_name not in self._types:
            self._load_extensions()
        found = self._types.get(type_name)
        if found is None:
            broken = [p for p in self._problems]
            hint = (
                f" ({len(broken)} extension file(s) failed to load: see swamp model type list)"
                if broken
                else ""
            )
            raise ModelNotFound(
                f"Model type '{type_name}' is not known{hint}. Known types: {', '.join(sorted(self._types))}",
                {"type": type_name, "extensionProblems": [p.__dict__ for p in broken]},
            )
        return found

    def all(self) -> tuple[list[ModelType], list[ExtensionProblem]]:
        self._load_extensions()
        return sorted(self._types.values(), key=lambda t: t.type), list(self._problems)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _import_extension(path: Path, root: Path) -> ModelType:
    module_name = f"swamp_extension_{abs(hash(str(path)))}_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot import this file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    shown = str(path.relative_to(root))
    raw = getattr(module, "model", None)
    if raw is None:
        raise ValueError("the module defines no `model`")
    return _model_type_from(raw, shown)


def _get(raw: Any, key: str, default: Any = None) -> Any:
    return raw.get(key, default) if isinstance(raw, dict) else getattr(raw, key, default)


def _model_type_from(raw: Any, source: str) -> ModelType:
    type_name = _get(raw, "type")
    if not isinstance(type_name, str) or not TYPE_NAME.match(type_name) or "/" not in type_name:
        raise ValueError(f"`model.type` must look like '@scope/name' or 'group/name', got {type_name!r}")
    methods_raw = _get(raw, "methods")
    if not isinstance(methods_raw, dict) or not methods_raw:
        raise ValueError("`model.methods` must map method names to {description, arguments, execute}")
    methods: dict[str, Method] = {}
    for name, spec in methods_raw.items():
        execute = _get(spec, "execute")
        if not callable(execute):
            raise ValueError(f"method '{name}' has no callable `execute(args, ctx)`")
        arguments = _get(spec, "arguments", {"type": "object"})
        if not isinstance(arguments, dict):
            raise ValueError(f"method '{name}': `arguments` must be a JSON Schema mapping")
        shell = _get(spec, "shellArguments", [])
        if not isinstance(shell, (list, tuple)) or not all(isinstance(k, str) for k in shell):
            raise ValueError(f"method '{name}': `shellArguments` must be a list of argument names")
        methods[str(name)] = Method(
            str(name), str(_get(spec, "description", "")), arguments, execute, frozenset(shell)
        )
    return ModelType(
        type=type_name,
        version=str(_get(raw, "version", "0")),
        description=str(_get(raw, "description", "")),
        methods=methods,
        source=source,
    )


class DefinitionRepository:
    """Model definitions: models/<type>/<name>.yaml, found by name, then by id."""

    def __init__(self, layout: RepoLayout):
        self.layout = layout
        self._cache: tuple[list[ModelDefinition], list[ExtensionProblem]] | None = None
        self._lock = threading.Lock()

    def scan(self) -> tuple[list[ModelDefinition], list[ExtensionProblem]]:
        with self._lock:
            if self._cache is None:
                self._cache = self._scan()
            return self._cache

    def _scan(self) -> tuple[list[ModelDefinition], list[ExtensionProblem]]:
        found: list[ModelDefinition] = []
        problems: list[ExtensionProblem] = []
        folder = self.layout.models_dir
        if not folder.is_dir():
            return found, problems
        for path in sorted(folder.rglob("*.yaml")):
            shown = str(path.relative_to(self.layout.root))
            try:
                found.append(_definition_from(load_yaml(path.read_text(encoding="utf-8")), shown))
            except (YamlError, ValueError, UnicodeDecodeError) as exc:
                problems.append(ExtensionProblem(shown, str(exc)))
        return found, problems

    def get(self, name_or_id: str) -> ModelDefinition:
        definitions, problems = self.scan()
        for definition in definitions:
            if definition.name == name_or_id:
                return definition
        for definition in definitions:
            if definition.id == name_or_id:
                return definition
        known = ", ".join(sorted(d.name for d in definitions)) or "none"
        raise ModelNotFound(
            f"Model '{name_or_id}' not found (known: {known}). Create one with: swamp model create TYPE NAME",
            {"model": name_or_id, "problems": [p.__dict__ for p in problems]},
        )

    def create(
        self, type_name: str, name: str, method_arguments: dict[str, dict[str, Any]]
    ) -> ModelDefinition:
        if not MODEL_NAME.match(name):
            raise ModelInvalid(f"Model name '{name}' is not valid: use letters, digits, '-', '_' or '.'")
        definitions, _ = self.scan()
        if any(d.name == name for d in definitions):
            raise ModelExists(f"A model named '{name}' already exists", {"model": name})
        path = self.layout.models_dir / type_name / f"{name}.yaml"
        shown = str(path.relative_to(self.layout.root))
        data = {
            "id": str(uuid.uuid4()),
            "name": name,
            "type": type_name,
            "globalArguments": {},
            "methods": {m: {"arguments": a} for m, a in method_arguments.items()},
        }
        write_atomic(path, dump_yaml(data).encode("utf-8"))
        self._cache = None
        return _definition_from(data, shown)


def _definition_from(raw: Any, shown: str) -> ModelDefinition:
    if not isinstance(raw, dict):
        raise ValueError("a model definition must be a mapping")
    for key in ("id", "name", "type"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ValueError(f"'{key}' is required and must be a string")
    unknown = set(raw) - {
        "id",
        "name",
        "type",
        "globalArguments",
        "methods",
        "description",
        "version",
        "tags",
    }
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(sorted(unknown))}")
    methods = raw.get("methods") or {}
    if not isinstance(methods, dict):
        raise ValueError("'methods' must map method names to {arguments: {...}}")
    method_arguments: dict[str, dict[str, Any]] = {}
    for name, spec in methods.items():
        args = (spec or {}).get("arguments") if isinstance(spec, dict) else None
        if args is not None and not isinstance(args, dict):
            raise ValueError(f"methods.{name}.arguments must be a mapping")
        method_arguments[str(name)] = dict(args or {})
    global_args = raw.get("globalArguments") or {}
    if not isinstance(global_args, dict):
        raise ValueError("'globalArguments' must be a mapping")
    return ModelDefinition(raw["id"], raw["name"], raw["type"], dict(global_args), method_arguments, shown)
