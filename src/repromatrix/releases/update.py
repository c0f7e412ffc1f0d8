"""`repromatrix compat update`: the rows the compatibility table lacks, from the index.

Flow: ``releases.facts.gather`` (index ─▶ Facts) ─▶ ``propose`` (Facts + table ─▶ Proposal:
rows to add or complete, each with its confidence and the metadata it came from, and
notes) ─▶ ``apply`` (compat.yaml text ─▶ new text, checked by ``config.compat.parse_table``)
─▶ a unified diff, ``--write``, ``--check`` (exit 1 when the table is behind), and the
``matrix.yaml`` stanza of each torch minor that has no pip stack yet.

Pairing rule for torch ↔ torchvision, from torchvision's Requires-Dist on torch: a
torchvision that pins a torch release (``==`` or a range with an upper bound) belongs
to it, and the table's row must list one such; when none pins it, the row must list
one torchvision whose open requirement admits it, and the newest such (what pip picks)
is proposed with confidence M: the metadata allows it, no release was built for it.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from repromatrix.config.compat import CompatTable, parse_table, spec_text
from repromatrix.config.yamlfile import load_yaml
from repromatrix.errors import ConfigError, Exit
from repromatrix.model import ONNX_PACKAGES

from . import PYPI_URL
from .facts import Facts, Requires

UNREACHABLE = ("not checked: download.pytorch.org (which CUDA indexes carry each torch and "
               "torch-tensorrt build) and NGC release notes (the ngc section) cannot be reached "
               "from here; rows from PyPI alone leave `indexes` empty and mark a derived `index` M")
_RANK = {"V": 2, "S": 1, "M": 0}
_SECTION = re.compile(r"^([a-z_]+):\s*$")
_ROW = re.compile(r'^  "([^"]+)":')
_BARE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass
class Row:
    """A row to add (``new``) or to complete (its torchvision pairing)."""

    section: str
    key: str
    fields: dict[str, Any]
    new: bool
    mark: str                                       # confidence: V, S or M
    why: list[str] = field(default_factory=list)   # one line per fact: what, from where, mark

    def summary(self) -> str:
        what = "new row" if self.new else "missing pairing"
        return f"{self.section} {self.key}: {what} [{self.mark}]"


@dataclass
class Proposal:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: dict[str, Any] = field(default_factory=dict)
    onnx: dict[str, list[str]] = field(default_factory=dict)  # releases the `onnx` lists lack

    @property
    def behind(self) -> bool:
        return bool(self.rows or self.onnx)


def weakest(*marks: str) -> str:
    return min(marks, key=lambda m: _RANK.get(m, 0))


def _bounded(spec: SpecifierSet) -> bool:
    """A requirement that names its torch: an exact pin or a range with an upper bound."""
    return any(s.operator in ("==", "===", "<", "<=", "~=") for s in spec)


def torchvision_pairing(torch: str, facts: Facts) -> tuple[list[str], list[str], str]:
    """(own, admitting, mark) for a torch release: torchvisions that pin it, those whose
    requirement admits it (newest last), and the confidence of the proposed pairing."""
    own, admitting = [], []
    for tv in facts.versions("torchvision"):
        req = facts.requires.get(("torchvision", tv))
        if req is None or req.torch is None or not req.torch.contains(torch, prereleases=False):
            continue
        admitting.append(tv)
        if _bounded(req.torch):
            own.append(tv)
    return own, admitting, "V" if own else "M"


def _pairing_why(torch: str, picks: list[str], facts: Facts, mark: str) -> list[str]:
    out = []
    for tv in picks:
        req = facts.requires[("torchvision", tv)]
        spec = spec_text(req.torch) if req.torch else ""
        kind = "pins it" if mark == "V" else "open upper bound: installs with it, built for an older torch"
        out.append(f"torchvision {tv} requires torch{spec} ({kind}) [{mark}; Requires-Dist of {req.source}]")
    return out


def propose_torch(table: CompatTable, facts: Facts) -> list[Row]:
    rows = []
    for rel in facts.releases.get("torch", []):
        own, admitting, mark = torchvision_pairing(rel.version, facts)
        known = table.torch.get(rel.version)
        if known is not None:
            listed = set(known.torchvision)
            if (own and listed & set(own)) or (not own and (listed & set(admitting) or not admitting)):
                continue
            picks = own or admitting[-1:]
            raw = {"torchvision": [*picks, *(v for v in known.torchvision if v not in picks)]}
            rows.append(Row("torch", rel.version, raw, new=False, mark=mark,
                            why=_pairing_why(rel.version, picks, facts, mark)))
            continue
        rows.append(_new_torch_row(rel.version, rel.python_range(), facts, own or admitting[-1:], mark))
    return rows


def _new_torch_row(version: str, wheels_python: str | None, facts: Facts, picks: list[str],
                   mark: str) -> Row:
    req = facts.requires.get(("torch", version))
    why = _pairing_why(version, picks, facts, mark) if picks else [
        f"no torchvision on the index requires a torch that admits {version}"]
    python = wheels_python or (req.requires_python if req else None) or ""
    why.append(f"python {python} from the CPython tags of its Linux x86_64 wheels [V]")
    cuda = req.cuda if req else None
    if cuda:
        why.append(f"pypi_cuda {cuda} from the CUDA pin in Requires-Dist of {req.source} [V]")  # type: ignore[union-attr]
    else:
        mark = "M"
        why.append("pypi_cuda unknown: no cuda-toolkit / nvidia-cuda-runtime pin read [M]")
    fields = {"torchvision": picks, "python": python, "pypi_cuda": cuda or "", "indexes": [],
              "src": mark, "note": "indexes unknown: download.pytorch.org not checked"}
    return Row("torch", version, fields, new=True, mark=mark, why=why)


def propose_trt(table: CompatTable, facts: Facts) -> list[Row]:
    rows = []
    for rel in facts.releases.get("torch-tensorrt", []):
        req = facts.requires.get(("torch-tensorrt", rel.version))
        if rel.version in table.torch_tensorrt or req is None or req.torch is None:
            continue
        index, index_why = derive_index(table, req)
        trt = _lower_bound(req.tensorrt) if req.tensorrt else ""
        why = [f"torch{spec_text(req.torch)} and tensorrt{spec_text(req.tensorrt or SpecifierSet())} "
               f"from Requires-Dist of {req.source} [V]",
               "python from the CPython tags of its Linux x86_64 wheels [V]", index_why]
        rows.append(Row("torch_tensorrt", rel.version, {
            "torch": spec_text(req.torch), "tensorrt": trt,
            "python": rel.python_range() or req.requires_python or "", "index": index, "src": "M",
            "note": "index derived, download.pytorch.org not checked"}, new=True, mark="M", why=why))
    return rows


def _lower_bound(spec: SpecifierSet) -> str:
    """"11.1" from ">=11.1.0,<11.2.0" (a trailing .0 dropped), as the table writes TensorRT."""
    lows = [s.version for s in spec if s.operator in (">=", "==", "~=")]
    low = min(lows, key=Version) if lows else ""
    return low[:-2] if low.count(".") == 2 and low.endswith(".0") else low


def derive_index(table: CompatTable, req: Requires) -> tuple[str, str]:
    """The CUDA index a new torch-tensorrt is built for, from the PyPI CUDA of the torch it
    requires when its TensorRT's CUDA major agrees; otherwise the newest index of that major."""
    torches = [v for v in table.torch_versions() if req.torch and req.torch.contains(v)]
    cuda = table.torch[torches[-1]].pypi_cuda if torches else None
    major = req.tensorrt_cuda or (cuda.split(".")[0] if cuda else None)
    fits = [i for i, c in table.indexes.items() if c and c.split(".")[0] == major]
    exact = [i for i in fits if table.indexes[i] == cuda]
    pick = (exact or sorted(fits, key=lambda i: Version(table.indexes[i] or "0")))[-1:] or ["cpu"]
    why = (f"index {pick[0]} derived [M]: the torch it requires is CUDA {cuda} on PyPI, "
           f"TensorRT for CUDA {major or '?'}; download.pytorch.org not checked")
    return pick[0], why


def propose(table: CompatTable, facts: Facts, today: str) -> Proposal:
    """Rows the table lacks, notes on what could not be decided, and the `checked` record."""
    out = Proposal(rows=propose_torch(table, facts) + propose_trt(table, facts),
                   onnx={p: new for p in ONNX_PACKAGES
                         if (new := [v for v in facts.versions(p) if v not in table.onnx.get(p, ())])})
    newest_torch = table.torch_versions()[-1]
    if not any(r.torch.contains(newest_torch) for r in table.torch_tensorrt.values()):
        out.notes.append(f"torch {newest_torch}: no torch-tensorrt release requires it yet")
    trt = facts.newest("tensorrt")
    if trt:
        out.notes.append(f"tensorrt {trt.version} is the newest on the index ({trt.uploaded}); "
                         f"the table's newest torch-tensorrt needs tensorrt "
                         f"{table.torch_tensorrt[table.trt_versions()[-1]].tensorrt}")
    out.notes += _disagreements(table, facts) + facts.unread + [UNREACHABLE]
    out.checked = {"date": today, "newest": {p: r.version for p in ("torch", "torchvision",
                                                                   "torch-tensorrt", "tensorrt",
                                                                   *ONNX_PACKAGES)
                                             if (r := facts.newest(p))}}
    return out


def _disagreements(table: CompatTable, facts: Facts) -> list[str]:
    """The newest torch row's Python range and PyPI CUDA beside what its wheels say."""
    notes = []
    newest = facts.newest("torch")
    row = table.torch.get(newest.version) if newest else None
    req = facts.requires.get(("torch", newest.version)) if newest else None
    if row and newest and req:
        wheels = newest.python_range()
        if wheels and SpecifierSet(wheels) != row.python:
            notes.append(f"torch {newest.version}: the table says python {spec_text(row.python)}, "
                         f"its Linux x86_64 wheels are for {wheels}")
        if req.cuda and req.cuda != row.pypi_cuda:
            notes.append(f"torch {newest.version}: the table says pypi_cuda {row.pypi_cuda}, "
                         f"{req.source} pins CUDA {req.cuda}")
    return notes


# ----------------------------------------------------------------- the table's text


def format_row(key: str, fields: dict[str, Any]) -> str:
    """One row in the table's flow style: `  "2.15.0": {torchvision: ["0.29.2"], ...}`."""
    parts = [f"{k}: {_flow(k, v)}" for k, v in fields.items()]
    return f"  {json.dumps(key) + ':':<10}{{{', '.join(parts)}}}"


def _flow(key: str, value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_flow(key, v) for v in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return text if key in ("index", "indexes", "src") and _BARE.match(text) else json.dumps(text)


def apply(text: str, proposal: Proposal, file: str) -> str:
    """The table's text with the proposed rows written in (existing rows completed in
    place, new rows in version order) and the `checked` record; parse-checked."""
    lines = text.splitlines()
    raw = load_yaml(text.encode("utf-8"), file)
    for row in proposal.rows:
        fields = row.fields
        if not row.new:
            old = dict(raw[row.section][row.key])
            old.pop("note", None)
            fields = {**old, **fields, "src": weakest(str(old.get("src", "M")), row.mark)}
            fields["note"] = "torchvision pairing from Requires-Dist (compat update)"
        lines = _put_row(lines, row.section, row.key, format_row(row.key, fields))
    for project, new in proposal.onnx.items():
        lines = _put_list(lines, project, [*raw.get("onnx", {}).get(project, []), *new])
    lines = _put_checked(lines, proposal.checked)
    out = "\n".join(lines) + "\n"
    parse_table(load_yaml(out.encode("utf-8"), file), file)  # never write a table that does not load
    return out


def _section_span(lines: list[str], section: str) -> tuple[int, int]:
    start = next((i for i, line in enumerate(lines) if line.startswith(f"{section}:")), None)
    if start is None:
        raise ConfigError(f"no `{section}:` section", key=section)
    end = next((i for i in range(start + 1, len(lines)) if _SECTION.match(lines[i])), len(lines))
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return start, end


def _put_row(lines: list[str], section: str, key: str, line: str) -> list[str]:
    start, end = _section_span(lines, section)
    rows = [(i, m[1]) for i in range(start + 1, end) if (m := _ROW.match(lines[i]))]
    for i, k in rows:
        if k == key:
            return [*lines[:i], line, *lines[i + 1:]]
    after = [i for i, k in rows if Version(k) < Version(key)]
    at = (after[-1] + 1) if after else (rows[0][0] if rows else start + 1)
    return [*lines[:at], line, *lines[at:]]


def _put_list(lines: list[str], project: str, versions: list[str]) -> list[str]:
    """The `onnx` section's line of ``project``: its releases in order (added when absent)."""
    line = f"  {project}: [{', '.join(json.dumps(v) for v in sorted(set(versions), key=Version))}]"
    start, end = _section_span(lines, "onnx")
    at = next((i for i in range(start + 1, end) if lines[i].startswith(f"  {project}:")), None)
    return [*lines[:at], line, *lines[at + 1:]] if at is not None else [*lines[:end], line, *lines[end:]]


CHECKED_COMMENT = "# When `repromatrix compat update --write` last compared this table with PyPI, and the\n" \
                  "# newest release of each package it saw there (the page shows both)."


def _put_checked(lines: list[str], checked: dict[str, Any]) -> list[str]:
    if not checked:
        return lines
    newest = ", ".join(f"{k}: {json.dumps(v)}" for k, v in checked["newest"].items())
    block = [f"checked: {{date: {json.dumps(checked['date'])}, newest: {{{newest}}}}}"]
    start = next((i for i, line in enumerate(lines) if line.startswith("checked:")), None)
    if start is not None:
        return [*lines[:start], *block, *lines[start + 1:]]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return [*lines, "", *CHECKED_COMMENT.splitlines(), *block]


def diff(old: str, new: str, name: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f"a/{name}", f"b/{name}"))


# ----------------------------------------------------------------- matrix.yaml stanzas


_PIP_STACK = re.compile(r'^(\s*)- \{kind: pip, torch: "([0-9.]+)"')


def minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def missing_stacks(table: CompatTable, matrix_text: str) -> list[str]:
    """Torch minors newer than the newest one with a pip stack in the matrix file."""
    raw = load_yaml(matrix_text.encode("utf-8"), "matrix")
    stacks = raw.get("stacks") if isinstance(raw, dict) else None
    have = {minor(str(s["torch"])) for s in stacks or () if isinstance(s, dict)
            and s.get("kind") == "pip" and s.get("torch")}
    if not have:
        return []
    top = max(have, key=Version)
    minors = dict.fromkeys(minor(v) for v in table.torch_versions())
    return [m for m in minors if Version(m) > Version(top)]


def stanza(minors: Sequence[str], indent: str = "  ") -> str:
    return "".join(f'{indent}- {{kind: pip, torch: "{m}"}}\n' for m in minors)


def add_stacks(matrix_text: str, minors: Sequence[str]) -> str:
    """The matrix file with a pip stack per minor after its last pip stack line."""
    lines = matrix_text.splitlines(True)
    last = [i for i, line in enumerate(lines) if _PIP_STACK.match(line)]
    if not minors or not last:
        return matrix_text
    indent = _PIP_STACK.match(lines[last[-1]])[1]  # type: ignore[index]
    return "".join([*lines[:last[-1] + 1], stanza(minors, indent), *lines[last[-1] + 1:]])


def today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None


# ----------------------------------------------------------------- the command


def update(*, table: Path | None = None, matrix: Path | None = None, index_url: str = PYPI_URL,
           recorded: Path | None = None, record: Path | None = None, check: bool = False,
           write: bool = False, stanza_only: bool = False) -> Exit:
    """`compat update`: read the index, propose the rows the table lacks, print (``check``:
    exit BEHIND when behind), apply (``write``) or print only the missing stacks (``stanza_only``)."""
    from importlib import resources

    from repromatrix.config.options import host_ca_bundle
    from repromatrix.paths import default_matrix

    from . import pypi
    from .facts import gather, is_linux_wheel

    table_path = table or Path(str(resources.files("repromatrix").joinpath("data/compat.yaml")))
    text = read_text(table_path)
    known = parse_table(load_yaml(text.encode("utf-8"), str(table_path)), str(table_path))
    if recorded:
        index: pypi.Index = pypi.RecordedIndex(recorded)
    else:
        ca = host_ca_bundle()
        index = pypi.LiveIndex(index_url, ca[0] if ca else None)
    recorder = pypi.Recorder(index, record) if record else None
    facts = gather(recorder or index, known)
    if recorder:
        recorder.save_pages({p: {f.filename for r in rels for f in r.files if f.wheel_tags is None
                                 or is_linux_wheel(f)} for p, rels in facts.releases.items()})
    proposal = propose(known, facts, today())
    new_text = apply(text, proposal, str(table_path))
    matrix_path = matrix or (default_matrix() if stanza_only else None)
    matrix_text = read_text(matrix_path) if matrix_path else ""
    stacks = missing_stacks(parse_table(load_yaml(new_text.encode("utf-8"), str(table_path)),
                                        str(table_path)), matrix_text) if matrix_path else []
    if stanza_only:
        print(stanza(stacks), end="")
        return Exit.OK
    _print_proposal(proposal, diff(text, new_text, table_path.name), stacks)
    if write:
        table_path.write_text(new_text, encoding="utf-8")
        if matrix_path and stacks:
            matrix_path.write_text(add_stacks(matrix_text, stacks), encoding="utf-8")
        print(f"compat: wrote {table_path}" + (f" and {matrix_path}" if stacks else ""))
    return Exit.BEHIND if check and (proposal.behind or stacks) else Exit.OK


def _print_proposal(proposal: Proposal, patch: str, stacks: list[str]) -> None:
    from repromatrix.textsafe import printable

    if not proposal.behind:
        print("compat: the table has every release and pairing the index shows")
    for project, new in proposal.onnx.items():
        print(printable(f"compat: onnx {project}: new release(s) {', '.join(new)} [V]"))
    for row in proposal.rows:
        print(printable(f"compat: {row.summary()}"))
        for line in row.why:
            print(printable(f"    {line}"))
    for m in stacks:
        print(printable(f'compat: torch {m} has no stack in the matrix file: - {{kind: pip, torch: "{m}"}}'))
    for note in proposal.notes:
        print(printable(f"note: {note}"))
    if proposal.behind:
        print(printable(patch, newlines=True), end="")
