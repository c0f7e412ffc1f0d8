"""Every shared option, declared once: its flag, variable, matrix key and reproduce rule.

From ``OPTIONS`` come the command-line parser (``add_options``), the variable table
``repromatrix`` reads (``variables``), docs/command-line.md's option table (``markdown_table``,
checked by tests/project/test_consistency.py), the ``RunOptions`` each command runs with (one
loop over the declarations: ``config.resolve.run_options``) and the options a pasted
command carries (``reproduce_args``). nox's ``_option_set`` is the model: an option
that is not here is read by one command only and declared beside it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repromatrix import envvars
from repromatrix.model import Settings, cell_id

from . import options as parse
from .matrix import STANDINS, Matrix
from .options import COMMAND_LINE, ENGINE_NAMES, RunOptions

# What a reproduce line reads from a run: (the matrix, its options) -> the option's values
Forward = Callable[[Matrix, RunOptions], Sequence[str]]
# How a value is parsed and checked: (the value, the flag/variable/key it came from) -> typed
Parse = Callable[[Any, str], Any]


@dataclass(frozen=True)
class Option:
    """One option of the command line and where else it may be set."""

    flags: tuple[str, ...]
    group: str  # which commands take it (see GROUPS)
    help: str
    kwargs: dict[str, Any] = field(default_factory=dict)  # argparse's: type, action, default, ...
    env: str | None = None  # REPROMATRIX_* that sets it when the flag is not given
    matrix: str | None = None  # the matrix.yaml key that sets it when neither is
    forward: Forward | None = None  # its values in a pasted reproduce line (None: not carried)
    fills: str | None = None  # the RunOptions field it fills (config.resolve)
    parse: Parse | None = None  # how a value for ``fills`` is parsed (None: as given)
    setting: str | None = None  # or: the model.Settings field it overrides (with_overrides)
    zero: bool = False  # 0 is a value here (a budget of 0 GB), not "not given"

    @property
    def flag(self) -> str:
        return self.flags[0]

    @property
    def dest(self) -> str:
        """The argparse destination its command-line value is found under."""
        return str(self.kwargs.get("dest") or self.flag.lstrip("-").replace("-", "_"))

    def given(self, value: Any) -> bool:
        """Whether ``value`` (from the command line, or matrix.yaml) sets the option."""
        return value is not None and (bool(value) or (self.zero and value == 0))


def _many(flag: str, values: Sequence[str]) -> list[str]:
    return [x for v in values for x in (flag, v)]


def _seconds(value: float) -> str:
    """A number of seconds as written back exactly: ``600``, ``1234.5678``."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _timeout(flag: str, name: str) -> Forward:
    """A timeout is carried only when this run's differs from the matrix's own."""
    def forward(m: Matrix, o: RunOptions) -> list[str]:
        value = getattr(o, name)
        return [flag, _seconds(value)] if value != getattr(m.settings, name) else []
    return forward


OPTIONS: tuple[Option, ...] = (
    # which matrix, which cells
    Option(("--matrix",), "select", "matrix file (default: ./matrix.yaml, else the project's)",
           {"type": Path, "metavar": "F"},
           forward=lambda m, o: ["--matrix", str(Path(m.path).resolve()), *m.catalog_args]),
    Option(("--repros",), "select", "a folder of your own repros, joined to the built-in catalog "
           "(repeatable; a repros/ beside --matrix joins too)",
           {"action": "append", "default": [], "type": Path, "metavar": "DIR"}),
    Option(("-k",), "select", "select cells by expression over cell/stack/repro ids, kinds and "
           "tags (pytest-like: and/or/not, globs)", {"dest": "expr", "metavar": "EXPR"}),
    Option(("--all",), "select", "include stacks that are not selected by default",
           {"dest": "all_stacks", "action": "store_true"}),
    # how environments are made
    Option(("--base-image",), "image", "map a public base image to a local/internal one "
           "(repeatable)", {"action": "append", "default": [], "metavar": "PUBLIC=LOCAL"},
           env="REPROMATRIX_BASE_IMAGES", matrix="defaults.base_images", setting="base_images",
           forward=lambda m, o: _many("--base-image", [f"{k}={v}" for k, v in
                                                       m.settings.base_images.items()])),
    Option(("--ca-bundle",), "image", "CA bundle added to images and environment builds (default: "
           "the host's; `none` turns that off)", {"metavar": "PEM"},
           env="REPROMATRIX_CA_BUNDLE", matrix="defaults.ca_bundle", setting="ca_bundle",
           forward=lambda m, o: ["--ca-bundle", m.settings.ca_bundle] if m.settings.ca_bundle else []),
    Option(("--find-links",), "image", "a local wheelhouse for builds (repeatable; the variable is "
           "`:`-separated)", {"action": "append", "default": [], "metavar": "DIR"},
           env="REPROMATRIX_FIND_LINKS", matrix="defaults.find_links", setting="find_links",
           forward=lambda m, o: _many("--find-links", m.settings.find_links)),
    Option(("--backend",), "engine", "the engine, or a fallback chain such as docker|venv "
           "(default: the matrix's, else docker)",
           {"default": None, "metavar": "|".join(ENGINE_NAMES)}, matrix="defaults.backend",
           forward=lambda m, o: ["--backend", o.backend]
           if o.backend != (m.settings.backend or "docker") else [],
           fills="backend", parse=parse.backend_chain),
    Option(("--python",), "engine", "the interpreter of `--backend local`",
           {"metavar": "PATH"}, env="REPROMATRIX_PYTHON", fills="python",
           forward=lambda m, o: ["--python", o.python] if o.backend == "local" and o.python
           and o.source("python") == COMMAND_LINE else []),
    Option(("--registry",), "engine", "docker: pull missing images from here before building",
           {"metavar": "REGISTRY/PREFIX"},
           forward=lambda m, o: ["--registry", o.registry] if o.registry else [],
           fills="registry", parse=parse.registry),
    Option(("--build-timeout",), "engine", "seconds for making one environment",
           {"type": float, "metavar": "S"}, matrix="defaults.build_timeout",
           forward=_timeout("--build-timeout", "build_timeout"), fills="build_timeout",
           parse=parse.seconds),
    Option(("--env-budget",), "engine", "venv: GB for environments and their uv cache (default: "
           "half the free disk plus what they take)", {"type": float, "metavar": "GB"},
           fills="env_budget_gb", parse=parse.budget, zero=True),
    # how cells are run
    Option(("--results",), "run", "results store folder",
           {"type": Path, "metavar": "DIR"},
           forward=lambda m, o: ["--results", str(o.results.resolve())], fills="results",
           parse=parse.folder),
    Option(("--rerun",), "run", "run cells even if a record is current", {"action": "store_true"},
           fills="rerun", parse=parse.flag),
    Option(("--timeout",), "run", "seconds for one repro", {"type": float, "metavar": "S"},
           matrix="defaults.repro_timeout", forward=_timeout("--timeout", "repro_timeout"),
           fills="repro_timeout", parse=parse.seconds),
    Option(("--stack-timeout",), "run", "seconds for one stack's whole runner",
           {"type": float, "metavar": "S"}, matrix="defaults.stack_timeout",
           forward=_timeout("--stack-timeout", "stack_timeout"), fills="stack_timeout",
           parse=parse.seconds),
    Option(("--repeat",), "run", "run each cell N times; disagreeing runs make it `flaky`",
           {"type": int, "metavar": "N"},
           forward=lambda m, o: ["--repeat", str(o.repeat)] if o.repeat > 1 else [],
           fills="repeat", parse=parse.repeat),
    Option(("--image-budget",), "run", "docker: remove this run's finished images past this size",
           {"type": float, "metavar": "GB"}, fills="image_budget_gb", parse=parse.budget, zero=True),
    Option(("--jobs", "-j"), "run", "stacks run at once", {"type": int, "metavar": "N"},
           fills="jobs", parse=parse.jobs),
    Option(("--repro-jobs",), "run", "repros one stack runs at once (default: where no NVIDIA GPU "
           "is here, the cores shared among the stacks that run at once, at most 4; else 1)",
           {"type": int, "metavar": "N"}, fills="repro_jobs", parse=parse.repro_jobs),
    Option(("--gpus",), "run", "GPU ids to spread stacks over, e.g. 0,1", fills="gpus",
           parse=parse.gpus),
    Option(("--keep",), "run", "keep containers for debugging", {"action": "store_true"},
           fills="keep", parse=parse.flag),
    Option(("--standin",), "run", "stand in for what is absent: build pip stacks with "
           "torch-tensorrt's own code and TensorRT stood in (never where a real TensorRT imports)",
           {"action": "append", "default": [], "choices": STANDINS}, matrix="defaults.standins",
           forward=lambda m, o: [] if o.standins_from_matrix else _many("--standin", o.standins),
           fills="standins", parse=parse.standins),
    # one shard of many machines
    Option(("--shard",), "shard", "run only shard K of N (see `plan --shards N`); every shard needs "
           "the same selection and --durations", {"metavar": "K/N"}),
    Option(("--durations",), "shard", "results folders/files whose recorded durations weigh the "
           "shards", {"type": Path, "nargs": "+", "action": "extend", "default": [],
                      "metavar": "PATH"}),
    # a plain script as the repro
    Option(("--script",), "script", "a plain script as the repro: exit 0 good, 125 cannot tell, "
           "other exits bad, a signal a crash", {"type": Path, "metavar": "PY"}),
    Option(("--bad-if-output",), "script", "with --script: bad when the output matches",
           {"metavar": "REGEX"}),
    # what `build` alone takes, but a RunOptions field all the same
    Option(("--push",), "build", "docker: push every ready image there (content-hash tags)",
           {"metavar": "REGISTRY/PREFIX"}, fills="push", parse=parse.registry),
    Option(("--work-dir",), "build", "where build contexts and logs go",
           {"type": Path}, fills="work_dir", parse=parse.folder),
)

GROUPS = {
    "select": "which matrix, which cells",
    "image": "how images and environments are built",
    "engine": "which engine makes environments",
    "run": "how cells are run",
    "shard": "one shard of many machines",
    "script": "a plain script as the repro",
    "build": "what `build` makes and where",
}
_BY_FLAG = {flag: opt for opt in OPTIONS for flag in opt.flags}
for _opt in OPTIONS:
    if _opt.env:
        envvars.declare(_opt.env, f"{_opt.help} (like `{_opt.flag}`)")


def option(flag: str) -> Option:
    """The declaration of ``flag``."""
    return _BY_FLAG[flag]


def add_options(parser: argparse.ArgumentParser, *groups: str, skip: Sequence[str] = (),
                **defaults: Any) -> None:
    """Add every option of ``groups`` to ``parser`` (``skip``: flags a command declares
    its own way; ``defaults``: per-command defaults by dest)."""
    for opt in OPTIONS:
        if opt.group in groups and opt.flag not in skip:
            parser.add_argument(*opt.flags, help=_help(opt), **opt.kwargs)
    if defaults:
        parser.set_defaults(**defaults)


def _help(opt: Option) -> str:
    where = [f"${opt.env}"] if opt.env else []
    where += [f"matrix {opt.matrix}"] if opt.matrix else []
    return f"{opt.help}" + (f" (also {', '.join(where)})" if where else "")


def variables() -> dict[str, str]:
    """Every REPROMATRIX_* variable the harness reads and what it sets."""
    return dict(envvars.VARIABLES)


def reproduce_args(matrix: Matrix, options: RunOptions) -> list[str]:
    """The options a pasted command needs to see what this run saw, from each option's
    ``forward`` rule; the results folder is absolute, so the line works from anywhere."""
    args: list[str] = []
    for opt in OPTIONS:
        if opt.forward is not None:
            args += opt.forward(matrix, options)
    return args


def rerun_command(matrix: Matrix, options: RunOptions, stack_id: str, repro: str) -> list[str]:
    """`repromatrix run` that re-runs one cell with this run's options. A cell of the
    stack `--backend local` folds pip/ngc stacks into (``local``) is selected by its repro."""
    folded = options.backend == "local" and stack_id == "local"
    args = reproduce_args(matrix, options)
    if folded and "--python" not in args:
        args += ["--python", options.local_python]
    return ["repromatrix", "run", *args, "-k", repro if folded else cell_id(stack_id, repro),
            "--rerun"]


def markdown_table() -> str:
    """docs/command-line.md's option table (tests/project/test_consistency.py keeps the page
    equal to it)."""
    rows = ["| option | variable | matrix.yaml | in reproduce lines | meaning |",
            "|---|---|---|---|---|"]
    for opt in OPTIONS:
        rows.append(f"| `{'`, `'.join(opt.flags)}` | {f'`{opt.env}`' if opt.env else ''} | "
                    f"{f'`{opt.matrix}`' if opt.matrix else ''} | "
                    f"{'yes' if opt.forward else ''} | {opt.help.replace('|', '&#124;')} |")
    return "\n".join(rows)


# the matrix keys and settings named here exist in matrix.yaml's defaults (model.Settings),
# the fields in RunOptions
assert all(o.matrix is None or o.matrix.split(".", 1)[1] in Settings.__dataclass_fields__
           for o in OPTIONS), \
    "an option names a matrix key that model.Settings lacks"
assert all(o.setting is None or o.setting in Settings.__dataclass_fields__ for o in OPTIONS), \
    "an option names a setting that model.Settings lacks"
assert all(o.fills is None or o.fills in RunOptions.__dataclass_fields__ for o in OPTIONS), \
    "an option names a field that RunOptions lacks"
