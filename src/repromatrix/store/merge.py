"""`repromatrix store merge SRC... --into DIR`: one store from many, losing and doubling nothing.

Used where a store must outlive one machine: the weekly workflow restores last week's
store (the `results` branch), merges each shard's records into it, renders the page
from it and pushes it back (``scripts/results-branch.sh``). A record is identified by
(run id, cell, attempt): one already in DIR with the same content is not written
again; one whose content differs is kept too (the report names it as a conflict and
shows the later one), so a merge never drops a record and running it twice adds
nothing. Unreadable lines of a source are named and skipped; the target's lock is held
(a run writing into DIR at the same time waits, and so does the merge).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from repromatrix.errors import UsageError
from repromatrix.textsafe import printable

from .lines import Skipped, canonical_record, iter_result_files, record, scan, walk_jsonl
from .record import Result
from .results import ResultStore, locked


@dataclass
class MergeSummary:
    added: int = 0          # records written into the target
    present: int = 0        # records the target already held (identical)
    differing: int = 0      # of `added`: a different record for a (run, cell, attempt) it held
    skipped: list[Skipped] = field(default_factory=list)


def merge_stores(sources: Sequence[Path | str], into: Path | str) -> MergeSummary:
    """Append to ``into`` every record of ``sources`` (files or folders) it lacks."""
    target = Path(into)
    missing = [str(s) for s in sources if not Path(s).exists()]
    if missing:
        raise UsageError(f"store merge: {missing[0]}: no such file or folder")
    target.mkdir(parents=True, exist_ok=True)
    summary = MergeSummary()
    with locked(target, on_wait=lambda line: print(printable(f"store merge: {line}"), file=sys.stderr)):
        held: dict[tuple[str, str, int], set[str]] = {}
        for path in walk_jsonl(target):
            good, bad = read_records(path)
            for rec, text in good:
                held.setdefault((rec.run_id, rec.cell, rec.attempt), set()).add(text)
        own = {p.resolve() for p in walk_jsonl(target)}
        files, gone = iter_result_files(sources)
        summary.skipped.extend(gone)
        store = ResultStore(target)
        try:
            for path in files:
                if path.resolve() in own:
                    continue
                good, bad = read_records(path)
                summary.skipped.extend(bad)
                for rec, text in good:
                    key = (rec.run_id, rec.cell, rec.attempt)
                    if text in held.get(key, ()):
                        summary.present += 1
                        continue
                    summary.differing += key in held
                    held.setdefault(key, set()).add(text)
                    store.append(rec)
                    summary.added += 1
        finally:
            store.close()
    return summary


def read_records(path: Path) -> tuple[list[tuple[Result, str]], list[Skipped]]:
    """Each record of one JSONL file with its canonical text, and the lines skipped."""
    good: list[tuple[Result, str]] = []
    bad: list[Skipped] = []
    with path.open("rb") as fh:
        for number, _, _, data in scan(fh, str(path)):
            rec = data if isinstance(data, Skipped) else record(data, str(path), number)
            if isinstance(rec, Skipped):
                bad.append(rec)
            else:
                good.append((rec, canonical_record(rec)))
    return good, bad
