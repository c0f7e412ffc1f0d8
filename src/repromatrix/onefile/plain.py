"""A plain script as a repro (`--script bug.py`): no protocol, the exit code is the verdict.

Exit 0 is good (``pass``), 125 is "cannot tell" (``skip``, like ``git bisect
run``), any other exit is bad (``fail``); ``--bad-if-output REGEX`` makes a
match in the output bad instead (then a non-zero exit without a match is
``error``: a different failure); a death by signal is a ``crash``. On the stand-in lane
the script runs with TensorRT stood in (its record says so), and a run in which
torch-tensorrt did not import is ``error`` (cannot tell), never bad (``_wrapper.py``).

The script becomes a generated protocol-shaped repro (``<id>.py``, the script
embedded in it) written to ``<results>/scripts/``, so it flows through the same
run stage, cache, store, page (its own column) and bisect as any repro; the
report finds it there again. The host reads the embedded script back with
``ast`` (never imports it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from repromatrix.config.catalog import load_catalog, read_repro
from repromatrix.config.matrix import Matrix
from repromatrix.config.validate import regular_file
from repromatrix.errors import ConfigError, UsageError
from repromatrix.model import Plan, Repro, StackGroup

SCRIPTS_DIR = "scripts"
MARK = "# repromatrix: generated from a plain script"
WRAPPER = Path(__file__).with_name("_wrapper.py")  # container side: the generated repro's body
SETTINGS = ("# <settings>\n", "# </settings>\n")
RULE = ("exit 0 is good, 125 cannot tell, any other exit is bad, a signal is a crash")
NOT_LOADED = "torch_tensorrt_not_loaded"  # the wrapper's stage evidence on the stand-in lane:
# torch-tensorrt did not import there, so the script could not tell (_wrapper.NOT_LOADED)


@dataclass(frozen=True)
class ScriptSpec:
    """`--script PATH` and `--bad-if-output REGEX` as given."""

    path: Path
    bad_if_output: str | None = None

    @property
    def id(self) -> str:
        return script_id(self.path)

    def args(self) -> tuple[str, ...]:
        out = ("--script", str(self.path.resolve()))
        return out + (("--bad-if-output", self.bad_if_output) if self.bad_if_output else ())


@dataclass(frozen=True)
class ScriptInfo:
    """What a generated repro embeds: the user's script and its rule."""

    name: str
    source: str
    origin: str
    bad_if_output: str | None

    @property
    def rule(self) -> str:
        if self.bad_if_output:
            return (f"bad if the output matches /{self.bad_if_output}/; exit 0 without a match is "
                    f"good, 125 cannot tell")
        return RULE


def script_id(path: Path) -> str:
    """The repro id of a script: its file name, lower-cased, other characters as ``_``."""
    sid = re.sub(r"[^a-z0-9_]+", "_", path.stem.lower()).strip("_")
    return sid or "script"


def check_spec(spec: ScriptSpec) -> None:
    """Bad input before anything runs: a missing or unreadable script, a broken regex."""
    if not spec.path.exists():
        raise UsageError(f"--script {spec.path}: no such file")
    regular_file(spec.path, "--script takes a Python file")  # a FIFO or a device is never read
    try:
        ast.parse(spec.path.read_text(), filename=str(spec.path))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--script {spec.path}: cannot read it: {exc}") from None
    except SyntaxError as exc:
        raise UsageError(f"--script {spec.path}: syntax error on line {exc.lineno}: {exc.msg}") from None
    if spec.bad_if_output is not None:
        try:
            re.compile(spec.bad_if_output)
        except re.error as exc:
            raise UsageError(f"--bad-if-output {spec.bad_if_output!r}: not a regular expression: "
                             f"{exc}") from None


def wrapper_source(spec: ScriptSpec) -> str:
    """The generated repro for ``spec`` (deterministic: same script, same text)."""
    source = spec.path.read_text()
    name = spec.path.name
    rule = ScriptInfo(name, source, "", spec.bad_if_output).rule
    meta = {"id": spec.id, "title": f"{name} (plain script)",
            "upstream": [], "description": f"The plain script {spec.path.resolve()}: {rule}.",
            "requires": [], "expect": []}
    head = [MARK, f"META = {meta!r}", f"SCRIPT_NAME = {name!r}",
            f"SCRIPT_ORIGIN = {str(spec.path.resolve())!r}",
            f"BAD_IF_OUTPUT = {spec.bad_if_output!r}", f"SCRIPT_SOURCE = {source!r}"]
    return "\n".join(head) + "\n" + wrapper_body()


def wrapper_body() -> str:
    """``_wrapper.py`` without its docstring and placeholder settings: what follows a
    generated wrapper's own settings."""
    text = WRAPPER.read_text(encoding="utf-8")
    code = ast.parse(text).body
    first = code[1].lineno - 1 if isinstance(code[0], ast.Expr) else 0  # after the docstring
    lines = text.splitlines(keepends=True)[first:]
    start, end = lines.index(SETTINGS[0]), lines.index(SETTINGS[1])
    return "\n" + "".join(lines[:start] + lines[end + 1:]).strip("\n") + "\n"


def write_wrapper(spec: ScriptSpec, folder: Path) -> Path:
    """Write (or keep, when unchanged) ``folder/<id>.py``."""
    check_spec(spec)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{spec.id}.py"
    text = wrapper_source(spec)
    if not target.is_file() or target.read_text() != text:
        target.write_text(text)
    return target


def read_wrapper(path: Path | str) -> ScriptInfo | None:
    """The script a generated repro embeds, or None for any other repro."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    if not text.startswith(MARK):
        return None
    values: dict[str, object] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in ("SCRIPT_NAME", "SCRIPT_ORIGIN", "BAD_IF_OUTPUT", "SCRIPT_SOURCE"):
                values[name] = ast.literal_eval(node.value)
    if not isinstance(values.get("SCRIPT_SOURCE"), str):
        return None
    bad = values.get("BAD_IF_OUTPUT")
    return ScriptInfo(str(values.get("SCRIPT_NAME")), str(values["SCRIPT_SOURCE"]),
                      str(values.get("SCRIPT_ORIGIN")), bad if isinstance(bad, str) else None)


def scripts_folder(results: Path) -> Path:
    return results / SCRIPTS_DIR


def add_script(matrix: Matrix, spec: ScriptSpec, results: Path) -> Matrix:
    """``matrix`` with the script joined to its catalog and to every stack's repros."""
    path = write_wrapper(spec, scripts_folder(results))
    other = matrix.repros.get(spec.id)
    if other is not None and Path(other.path).resolve() != path.resolve():
        raise ConfigError(f"the script's repro id {spec.id!r} is also {other.path}: rename the "
                          f"script", file=str(spec.path), key="--script")
    repro = read_repro(path)
    stacks = tuple(replace(s, repros=tuple(dict.fromkeys((*s.repros, spec.id))))
                   for s in matrix.stacks)
    return replace(matrix, stacks=stacks, repros={**matrix.repros, spec.id: repro},
                   catalog_args=(*matrix.catalog_args, *spec.args()))


def only(plan: Plan, repro: str) -> Plan:
    """The plan's cells of one repro (`run --script` runs the script, nothing else)."""
    return Plan(tuple(StackGroup(g.stack, (repro,)) for g in plan.groups if repro in g.repros))


def report_catalog(catalog: Mapping[str, Repro], results: Sequence[Path]) -> dict[str, Repro]:
    """``catalog`` plus the plain scripts the results folders ran (``<results>/scripts``),
    so the page titles their columns; a catalog repro of the same id wins."""
    out = dict(catalog)
    for root in results:
        folder = scripts_folder(Path(root))
        if folder.is_dir():
            for rid, repro in load_catalog(folder).items():
                out.setdefault(rid, repro)
    return out
