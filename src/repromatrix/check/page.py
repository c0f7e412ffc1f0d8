"""What the page's "Check your versions" box answers from: ``check.decide``'s inputs, compact.

Flow: a page's ``results.json`` (``check.records.results_json_rows``, the rows ``check
--from`` reads) + the catalog + the compatibility table -> **check.page** -> the report's
``data/verdicts.js`` (records, catalog) and ``data/upgrades.js`` (the table) ->
``report/static/check.js``, which mirrors ``check.decide`` and
``check.candidates``. What does not depend on the versions typed in is worked out here,
once, in Python: the rows (settled per cell, decisive only), each bug's workaround
sentences, and the table's upgrade paths (each torch-tensorrt release's torch versions, as
its specifier allows them). Rows name their stack by position in ``stacks`` (each
stack's versions once); bugs and NGC releases are lists, so no text becomes an object key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from repromatrix.rules.verdict import REAL, STANDIN

from .decide import AXES, EVIDENCE_WORDS, FORMAT, LABELS, workaround

if TYPE_CHECKING:
    from repromatrix.config.compat import CompatTable

PAGE_FORMAT = 1
# the files ``upgrade_data`` depends on: their digest says whether it changed without
# importing the table's reader (``report.cell`` keys its pieces the same way)
TABLE_SOURCES = ("data/compat.yaml", "config/compat.py", "config/catalog.py",
                 "check/candidates.py", "check/page.py")
STACK_AXES = (*AXES, "python")
ROW_KEYS = ("cell", "repro", "status", "evidence", "workaround", "run_id", "finished_at", "host")


def page_bugs(bugs: Mapping[str, Mapping[str, Any]]) -> list[list[Any]]:
    """Each bug as ``[id, {title, upstream, requires, expect, workaround}]``, sorted by id;
    a rule's ``when`` as ``[[package, specifier], ...]`` (null when it is not a mapping)."""
    out = []
    for bug_id in sorted(bugs):
        bug = bugs[bug_id]
        rules = []
        for rule in bug.get("expect") or ():
            when = rule.get("when") or {}
            rules.append({"when": [[str(k), str(v)] for k, v in when.items()]
                          if isinstance(when, Mapping) else None,
                          "status": str(rule.get("status", "")), "note": str(rule.get("note", "")),
                          "said": str(rule.get("status"))})  # what decide's verdict reads
        out.append([bug_id, {"title": str(bug.get("title", bug_id)),
                             "upstream": list(bug.get("upstream") or ()),
                             "requires": [str(r) for r in bug.get("requires") or ()],
                             "expect": rules, "workaround": workaround(bug)}])
    return out


def page_rows(rows: Iterable[Mapping[str, Any]]) -> tuple[list[list[Any]], list[list[Any]]]:
    """(stacks, rows): each distinct ``[stack, kind, gpu, *versions]`` once, and each row as
    ``[stack position, *ROW_KEYS]``."""
    stacks: dict[tuple[Any, ...], int] = {}
    out = []
    for row in sorted(rows, key=lambda r: r["cell"]):
        key = (row["stack"], row["kind"], row["gpu"], *(row["versions"].get(a) for a in STACK_AXES))
        out.append([stacks.setdefault(key, len(stacks)), *(row[k] for k in ROW_KEYS)])
    return [list(k) for k in stacks], out


def table_digest() -> str:
    """A digest of ``TABLE_SOURCES``: ``upgrade_data`` changes only with it."""
    package = Path(__file__).resolve().parents[1]
    return hashlib.sha1(b"".join((package / name).read_bytes() for name in TABLE_SOURCES)
                        ).hexdigest()


def upgrade_data(table: CompatTable) -> dict[str, Any]:
    """The table as ``check.candidates`` walks it for pins without a Python version: torch
    releases with their torchvision pairing, torch-tensorrt releases with the positions of
    the torch releases they allow (and whether one is broken), NGC releases in order; and
    the names no requirement counts as a package (``config.catalog.NOT_PACKAGES``)."""
    from repromatrix.config.catalog import NOT_PACKAGES

    from .candidates import NGC_IMAGE, PIP_NAMES

    torches = table.torch_versions()
    return {
        "format": PAGE_FORMAT, "not_packages": list(NOT_PACKAGES),
        "torch": [[v, list(table.torch[v].torchvision)] for v in torches],
        "torch_tensorrt": [[v, bool(table.torch_tensorrt[v].broken),
                            [i for i, t in enumerate(torches) if table.torch_tensorrt[v].torch.contains(t)]]
                           for v in table.trt_versions()],
        "torchvision": sorted({tv for r in table.torch.values() for tv in r.torchvision}, key=Version),
        "ngc": [[t, table.ngc[t].torch, table.ngc[t].torch_tensorrt, table.ngc[t].tensorrt,
                 table.ngc[t].python] for t in table.ngc_tags()],
        "ngc_image": NGC_IMAGE, "pip_names": PIP_NAMES,
    }


def page_data(bugs: Mapping[str, Mapping[str, Any]], rows: Iterable[Mapping[str, Any]]
              ) -> dict[str, Any]:
    """What the box needs of the records and the catalog, as one JSON-shaped mapping."""
    stacks, compact = page_rows(rows)
    return {"format": PAGE_FORMAT, "answer_format": FORMAT, "labels": LABELS,
            "evidence_words": EVIDENCE_WORDS, "real": REAL, "standin": STANDIN,
            "axes": list(STACK_AXES), "row_keys": list(ROW_KEYS),
            "bugs": page_bugs(bugs), "stacks": stacks, "rows": compact}
