"""model create / list / get / type list."""

from __future__ import annotations

from typing import Any

from .context import App


def _example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    examples = {"string": "", "number": 0, "integer": 0, "boolean": False, "object": {}, "array": []}
    out: dict[str, Any] = {}
    for key in schema.get("required") or []:
        prop = props.get(key) or {}
        out[key] = "echo hello" if key == "run" else examples.get(str(prop.get("type")))
    return out


def create_model(app: App, type_name: str, name: str) -> dict[str, Any]:
    model_type = app.methods.types.get(type_name)
    method_args = {m.name: _example_arguments(m.arguments) for m in model_type.methods.values()}
    definition = app.methods.definitions.create(type_name, name, method_args)
    return definition.to_dict()


def list_models(app: App) -> dict[str, Any]:
    definitions, problems = app.methods.definitions.scan()
    return {
        "models": [d.to_dict() for d in sorted(definitions, key=lambda d: d.name)],
        "problems": [p.__dict__ for p in problems],
    }


def get_model(app: App, name: str) -> dict[str, Any]:
    definition = app.methods.definitions.get(name)
    doc = definition.to_dict()
    try:
        doc["typeInfo"] = app.methods.types.get(definition.type).summary()
    except Exception as exc:  # the definition is still worth showing when its type is broken
        doc["typeError"] = str(exc)
    return doc


def list_model_types(app: App) -> dict[str, Any]:
    types, problems = app.methods.types.all()
    return {"types": [t.summary() for t in types], "problems": [p.__dict__ for p in problems]}
