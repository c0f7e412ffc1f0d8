"""How fresh the page is: the newest release of each package the compatibility table knows,
what PyPI showed when the table was last checked (`compat update --write` records it), the
newest release the matrix has a stack for, and the known releases newer than that.

Computed by the CLI (the table and the matrix's stacks are its inputs), handed to
``report.render.render_site`` as ``freshness`` and rendered by ``_freshness.html.j2``. Pure
functions besides ``table_checked``, which reads the table's ``checked`` record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any

from packaging.version import InvalidVersion, Version

from repromatrix.config.compat import TABLE_FILE, CompatTable
from repromatrix.config.yamlfile import load_yaml
from repromatrix.model import Stack


def table_checked(path: Any = None) -> dict[str, Any] | None:
    """The table's ``checked`` record ({date, newest: {package: version}}), None if absent."""
    ref = path or resources.files("repromatrix").joinpath(TABLE_FILE)
    raw = load_yaml(ref.read_bytes(), str(ref))
    checked = raw.get("checked") if isinstance(raw, dict) else None
    return checked if isinstance(checked, dict) else None


def _top(versions: Iterable[str | None]) -> str | None:
    found = []
    for v in versions:
        try:
            found.append((Version(str(v)), str(v)))
        except InvalidVersion:
            continue
    return max(found)[1] if found else None


def freshness(table: CompatTable, checked: Mapping[str, Any] | None,
              stacks: Iterable[Stack]) -> dict[str, Any]:
    """The data of the page's freshness section."""
    stacks = list(stacks)
    on_index = dict((checked or {}).get("newest") or {})
    known = {
        "torch": table.torch_versions(),
        "torchvision": sorted({v for r in table.torch.values() for v in r.torchvision}, key=Version),
        "torch-tensorrt": table.trt_versions(),
        "tensorrt": sorted({r.tensorrt for r in table.torch_tensorrt.values()}
                           | {r.tensorrt for r in table.ngc.values() if r.tensorrt}, key=Version),
        "NGC PyTorch": table.ngc_tags(),
    }
    stacked = {
        "torch": _top(s.torch for s in stacks if s.kind == "pip"),
        "torchvision": _top(s.torchvision for s in stacks if s.kind == "pip"),
        "torch-tensorrt": _top(s.torch_tensorrt for s in stacks if s.kind == "pip"),
        "tensorrt": _top(s.tensorrt for s in stacks),
        "NGC PyTorch": _top(s.ngc for s in stacks if s.kind == "ngc"),
    }
    rows = [{"package": name, "table": versions[-1] if versions else None,
             "index": on_index.get(name), "stack": stacked[name],
             "no_stack": [v for v in versions if stacked[name] and Version(v) > Version(stacked[name])]
             if name != "torchvision" else []}
            for name, versions in known.items()]
    waiting = [f"{r['package']} {v}" for r in rows for v in r["no_stack"]]
    return {"checked": (checked or {}).get("date"), "rows": rows, "waiting": waiting}
