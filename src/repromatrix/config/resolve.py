"""RunOptions from the declarations in ``config/flags.py``: one loop, each value's source kept.

Each option that fills a ``RunOptions`` field is resolved the same way: the command
line, else its variable (``envvars.read``), else its matrix.yaml ``defaults`` key, else
the field's default; the value goes through the option's parser naming where it came
from (``--timeout``, ``REPROMATRIX_PYTHON``, ``defaults.backend`` in the matrix file),
and ``RunOptions.sources`` records that place for every field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, replace
from typing import Any

from repromatrix import envvars
from repromatrix.errors import ConfigError, UsageError

from .flags import OPTIONS, Option
from .matrix import Matrix
from .options import COMMAND_LINE, RunOptions

DEFAULT = "default"  # a value's source: neither given nor set (or a command's own default)


def matrix_source(key: str) -> str:
    """The source of a value set by the matrix file's ``key`` (``defaults.backend``)."""
    return f"matrix.yaml {key}"


def run_options(matrix: Matrix, args: Mapping[str, Any] | Any, *,
                defaults: Mapping[str, Any] | None = None,
                environ: Mapping[str, str] | None = None) -> RunOptions:
    """RunOptions from parsed arguments (a namespace or a mapping by argparse dest), the
    environment (``environ``, default the process's) and the matrix. ``defaults``: a
    command's own default by field (bisect's engine), in place of matrix.yaml's and the
    field's."""
    get = args.get if isinstance(args, Mapping) else (lambda key: getattr(args, key, None))
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for opt in OPTIONS:
        if opt.fills is not None:
            values[opt.fills], sources[opt.fills] = _resolve(opt, get(opt.dest), matrix,
                                                             defaults or {}, environ)
    options = RunOptions(**values, sources=sources)
    from_matrix = sources["standins"] != COMMAND_LINE and bool(options.standins)
    options = replace(options, standins_from_matrix=from_matrix)
    if options.standins and options.backend == "local":
        if not from_matrix:
            raise UsageError(f"--standin {','.join(options.standins)}: the stand-in lane is built "
                             f"by the docker and venv engines; --backend local runs an "
                             f"interpreter as it is")
        options = replace(options, standins=())  # the matrix's wish: no engine here builds it
    return options


def _resolve(opt: Option, given: Any, matrix: Matrix, defaults: Mapping[str, Any],
             environ: Mapping[str, str] | None) -> tuple[Any, str]:
    """One option's value and where it came from."""
    assert opt.fills is not None
    if opt.given(given):
        return _parsed(opt, given, opt.flag), COMMAND_LINE
    if opt.env and (text := envvars.read(opt.env, environ)) is not None:
        return _parsed(opt, text, opt.env), opt.env
    if opt.fills in defaults:
        return _parsed(opt, defaults[opt.fills], opt.flag), DEFAULT
    if opt.matrix:
        key = opt.matrix.split(".", 1)[1]
        value = getattr(matrix.settings, key)
        if opt.given(value):
            try:
                parsed = _parsed(opt, value, opt.matrix)
            except UsageError as exc:
                raise ConfigError(str(exc), file=str(matrix.path), key=opt.matrix) from None
            return parsed, matrix_source(opt.matrix) if key in matrix.defaults_given else DEFAULT
    default = RunOptions.__dataclass_fields__[opt.fills].default
    assert default is not MISSING, f"RunOptions.{opt.fills} has no default"
    return _parsed(opt, default, opt.flag), DEFAULT


def _parsed(opt: Option, value: Any, where: str) -> Any:
    return opt.parse(value, where) if opt.parse else value
