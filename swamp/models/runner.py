"""Runs a model method for the engine: definition + type + merged, validated arguments."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..domain.errors import ModelNotFound
from ..domain.inputs import InputValidationService
from ..domain.run import WorkflowRun
from ..domain.shellwords import ShellArguments
from ..engine.ports import OutputLog
from ..store.repo import RepoLayout
from .registry import DefinitionRepository, ModelTypeRegistry
from .types import MethodContext, MethodFailed


class ModelMethodRunner:
    def __init__(self, layout: RepoLayout, validation: InputValidationService):
        self.layout = layout
        self.validation = validation
        self.types = ModelTypeRegistry(layout)
        self.definitions = DefinitionRepository(layout)

    def _method(self, model: str, method: str) -> tuple[Any, Any, Any]:
        definition = self.definitions.get(model)
        model_type = self.types.get(definition.type)
        found = model_type.methods.get(method)
        if found is None:
            raise ModelNotFound(
                f"Unknown method '{method}' for type '{model_type.type}'. "
                f"Available methods: {', '.join(sorted(model_type.methods))}",
                {"model": model, "method": method},
            )
        return definition, model_type, found

    def shell_arguments(self, model: str, method: str) -> ShellArguments:
        found = self._method(model, method)[2]
        return ShellArguments(frozenset(found.shell_arguments), found.values_by_environment)

    def run_method(
        self,
        model: str,
        method: str,
        inputs: dict[str, Any],
        *,
        run: WorkflowRun,
        step_name: str,
        log: OutputLog,
        on_abandon: Callable[[Callable[[], None]], Callable[[], None]] | None = None,
        shell_values: dict[str, str] | None = None,
    ) -> Any:
        definition, _, found = self._method(model, method)
        schema = found.arguments
        declared = schema.get("properties") if isinstance(schema, dict) else None
        # Global arguments are shared by every method: each method takes the ones it declares.
        shared = {
            k: v
            for k, v in definition.global_arguments.items()
            if not isinstance(declared, dict) or k in declared
        }
        args = {**shared, **definition.method_arguments.get(method, {}), **inputs}
        args = self.validation.apply_defaults(self.validation.coerce(args, schema), schema)
        problems = self.validation.problems(args, schema)
        if problems:
            raise MethodFailed("Method arguments validation failed: " + "; ".join(str(p) for p in problems))
        ctx = MethodContext(
            repo_dir=str(self.layout.root),
            model_name=definition.name,
            model_type=definition.type,
            method_name=method,
            run_id=run.id,
            workflow_name=run.workflowName,
            step_name=step_name,
            global_arguments=dict(definition.global_arguments),
            log=log,
            shell_values=dict(shell_values or {}),
        )
        if on_abandon is not None:
            ctx.on_abandon = on_abandon
        result = found.execute(args, ctx)
        try:
            return json.loads(json.dumps(result, allow_nan=False))
        except (TypeError, ValueError):
            raise MethodFailed(
                f"Method '{method}' of model '{definition.name}' returned a value that is not JSON: "
                f"{type(result).__name__}"
            ) from None
