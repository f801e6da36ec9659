"""What a model type is: a named set of methods, each with a JSON-Schema `arguments` and `execute`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..engine.ports import MethodFailed, OutputLog

__all__ = ["Method", "MethodContext", "MethodFailed", "ModelType"]


@dataclass
class MethodContext:
    repo_dir: str
    model_name: str
    model_type: str
    method_name: str
    run_id: str
    workflow_name: str
    step_name: str
    global_arguments: dict[str, Any]
    # `log(line)` streams a line as the step's output (stdout); command/shell passes stream="stderr"
    # for its command's stderr lines.
    log: OutputLog = field(default=lambda line, stream="stdout": None)
    # Call with a function that stops the work at once; it runs if the run is abandoned mid-step
    # (swamp serve's shutdown after its grace). Returns a function that takes the request back.
    on_abandon: Callable[[Callable[[], None]], Callable[[], None]] = field(default=lambda stop: lambda: None)
    # The values of the expressions in the method's shell arguments, for a method that takes them
    # through its command's environment (`Method.values_by_environment`, MODEL-015).
    shell_values: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    arguments: dict[str, Any]
    execute: Callable[[dict[str, Any], MethodContext], Any]
    shell_arguments: frozenset[str] = frozenset()
    # True: the method puts `ctx.shell_values` into its command's environment, and the shell
    # arguments refer to them (command/shell); False: values are quoted inline (MODEL-016).
    values_by_environment: bool = False


@dataclass(frozen=True)
class ModelType:
    type: str
    version: str
    description: str
    methods: dict[str, Method]
    source: str  # "builtin" or the extension file's path

    def summary(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "version": self.version,
            "description": self.description,
            "source": self.source,
            "methods": {
                name: {"description": m.description, "arguments": m.arguments}
                for name, m in self.methods.items()
            },
        }
