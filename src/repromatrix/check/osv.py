"""The catalog as OSV records, so osv-scanner (and anything reading OSV) scans for its bugs.

Flow: the catalog's bugs + verdict rows + the compatibility table -> ``check.fixes`` (each
bug's package, its affected runs of releases and its fix: the page's and ``check``'s own
answer, not derived again here) -> **check.osv** -> one OSV JSON file per bug (schema
1.7.x, https://ossf.github.io/osv-schema/) and ``osv-scanner/PyPI/all.zip``, the layout
osv-scanner's offline mode reads (``--offline`` with
``OSV_SCANNER_LOCAL_DB_CACHE_DIRECTORY``).

Each affected run ``[first, last]`` of the package's releases is its own ECOSYSTEM range:
``introduced: first``, then ``fixed: <the fix>`` for the newest run when a release fixes
it, ``last_affected: last`` for an older run, and nothing (affected from ``first`` on)
while no release fixes it; ``versions`` lists the affected releases the table knows. The
ids carry OSV's prefix for a database it does not aggregate (``x_REPROMATRIX-<bug>``).
NGC releases are not a PyPI ecosystem: they go in ``database_specific.ngc``, with the bug's
kind (``model.KINDS``' key), the evidence levels of the bug's deciding records and whether
the fix rests on the repro's rules only.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from repromatrix.rules.versions import LABELS

from .decide import decisive, evidence_words, kind_of
from .fixes import fix_words

SCHEMA_VERSION = "1.7.5"
PREFIX = "x_REPROMATRIX-"
ECOSYSTEM = "PyPI"
ZIP = Path("osv-scanner") / ECOSYSTEM / "all.zip"


def timestamp(when: str | None) -> str:
    """An ISO time (the records' newest) as OSV writes one: UTC, ending in ``Z``."""
    from datetime import datetime, timezone

    moment = datetime.fromisoformat(when) if when else datetime.now(timezone.utc)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def osv_id(bug_id: str) -> str:
    """A bug's OSV id."""
    return PREFIX + bug_id


def advisory(bug_id: str, bug: Mapping[str, Any], fix: Mapping[str, Any],
             rows: Sequence[Mapping[str, Any]], known: Sequence[str], modified: str) -> dict[str, Any]:
    """One bug as an OSV record: its package's affected releases, its fix, its links."""
    levels = sorted({evidence_words(r) for r in rows if r["repro"] == bug_id and decisive(r)})
    words = fix_words(fix)
    details = str(bug.get("description") or bug.get("title") or bug_id)
    affected = []
    if fix["affected"]:
        affected.append({"package": {"ecosystem": ECOSYSTEM, "name": LABELS[fix["package"]]},
                         "ranges": ranges(fix),
                         "versions": affected_versions(fix["affected"], known)})
    return {
        "schema_version": SCHEMA_VERSION,
        "id": osv_id(bug_id),
        "modified": modified,
        "summary": str(bug.get("title") or bug_id),
        "details": details + (f"\n\n{words[0].upper()}{words[1:]}." if words else ""),
        "affected": affected,
        "references": [{"type": "REPORT" if "/issues/" in url else "WEB", "url": url}
                       for url in bug.get("upstream") or ()],
        "database_specific": {
            "repro": bug_id,
            "kind": kind_of(bug),
            "evidence": levels,
            "fixed_in": fix["fixed_in"],
            "fix_inferred": fix["inferred"],
            "ngc": {"affected": fix["ngc"]["affected"], "fixed_in": fix["ngc"]["fixed_in"],
                    "fix_inferred": fix["ngc"]["inferred"]},
            "check": "repromatrix check -r requirements.txt",
        },
    }


def ranges(fix: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One ECOSYSTEM range per affected run (OSV allows ``fixed`` or ``last_affected`` in a
    range, not both): introduced at its first release, ended by the fix (the newest run), by
    its last affected release (an older run), or left open (no release fixes it)."""
    out: list[dict[str, Any]] = []
    runs = fix["affected"]
    for n, (first, last) in enumerate(runs):
        events: list[dict[str, str]] = [{"introduced": first}]
        if n < len(runs) - 1:
            events.append({"last_affected": last})
        elif fix["fixed_in"]:
            events.append({"fixed": fix["fixed_in"]})
        out.append({"type": "ECOSYSTEM", "events": events})
    return out


def affected_versions(runs: Sequence[Sequence[str]], known: Sequence[str]) -> list[str]:
    """The releases the table knows inside the runs, in the table's order."""
    place = {v: n for n, v in enumerate(known)}
    spans = [(place[a], place[b]) for a, b in runs if a in place and b in place]
    return [v for n, v in enumerate(known) if any(lo <= n <= hi for lo, hi in spans)]


def advisories(bugs: Mapping[str, Mapping[str, Any]], fixes: Mapping[str, Mapping[str, Any]],
               rows: Sequence[Mapping[str, Any]], known: Mapping[str, Sequence[str]],
               modified: str) -> dict[str, dict[str, Any]]:
    """Every bug's OSV record, by OSV id; ``known``: each package's releases, oldest first."""
    return {osv_id(b): advisory(b, bugs[b], fixes[b], rows, known.get(fixes[b]["package"], ()),
                                modified) for b in sorted(bugs)}


def write(folder: Path, records: Mapping[str, Mapping[str, Any]]) -> list[Path]:
    """``<id>.json`` per record and ``osv-scanner/PyPI/all.zip`` (those with a PyPI package);
    a record file of a bug no longer in the catalog is removed. The paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob(f"{PREFIX}*.json"):
        if old.stem not in records:
            old.unlink()
    written = []
    texts = {i: json.dumps(r, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
             for i, r in sorted(records.items())}
    for i, text in texts.items():
        path = folder / f"{i}.json"
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    archive = folder / ZIP
    archive.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for i, text in texts.items():
            if any(a["package"]["ecosystem"] == ECOSYSTEM for a in records[i]["affected"]):
                info = zipfile.ZipInfo(f"{i}.json", (1980, 1, 1, 0, 0, 0))  # the same bytes each time
                z.writestr(info, text, zipfile.ZIP_DEFLATED)
    return [*written, archive]
