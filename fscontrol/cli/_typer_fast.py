"""Option values without pydantic: typer (0.29) coerces every parameter of the command it runs,
even one left at its default, through a pydantic TypeAdapter. Importing pydantic and building
those adapters costs about 70 ms per command on a 2-core machine, more than `import typer`
itself, on every `status`, `collect` and cron `tick`.

fscontrol's options are str, int, float, Path and bool flags, with no constraints; those are
converted here with the standard library (Path through typer's own path check). Anything else
(lists, choices, custom parsers, min/max, files, a value that is not a plain string) goes to
typer's own conversion, built on first use, so behaviour there is typer's exactly. `install()`
does nothing when typer has no such hook (another typer version): the CLI is then only slower.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def install() -> bool:
    try:
        from typer import _coercion, core
        from typer._click.exceptions import BadParameter
        from typer._param_types import coerce_cli_path
    except ImportError:  # pragma: no cover - another typer
        return False
    typer_build = getattr(core, "build_runtime_param", None)
    base = getattr(_coercion, "RuntimeParam", None)
    if typer_build is None or base is None:  # pragma: no cover - another typer
        return False
    if getattr(typer_build, "fscontrol_fast", False):
        return True

    @dataclass(frozen=True)
    class PlainRuntimeParam(base):  # type: ignore[misc, valid-type]
        descriptor: Any = None
        typer_param: list = field(default_factory=list)  # typer's own, built when first needed

        def _typer(self):
            if not self.typer_param:
                self.typer_param.append(typer_build(self.descriptor))
            return self.typer_param[0]

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            kind = self.annotation
            if kind is bool and isinstance(value, bool):
                return value
            if not isinstance(value, str) or kind is bool:
                return self._typer()._coerce_value(value, param=param, ctx=ctx)
            if kind is str:
                return value
            if kind is int or kind is float:
                try:
                    return kind(value)
                except ValueError:
                    what = "an integer" if kind is int else "a number"
                    raise BadParameter(f"{value!r} is not {what}.", ctx=ctx, param=param) from None
            info = self.parameter_info
            kind = info.path_type or kind  # a Path already made is checked (exists=...) without pydantic
            return coerce_cli_path(kind(value), info, path_type=kind, param=param, ctx=ctx)

    def build_runtime_param(descriptor):
        info = descriptor.parameter_info
        kind = descriptor.annotation
        plain = (
            kind in (str, int, float, bool) or (isinstance(kind, type) and issubclass(kind, Path))
        ) and (
            descriptor.file_annotation is None
            and info.parser is None
            and getattr(info, "click_type", None) is None
            and info.min is None
            and info.max is None
            and not descriptor.is_choice
        )
        if not plain:
            return typer_build(descriptor)
        return PlainRuntimeParam(annotation=kind, parameter_info=info, descriptor=descriptor)

    build_runtime_param.fscontrol_fast = True  # type: ignore[attr-defined]
    core.build_runtime_param = build_runtime_param
    return True
