#!/usr/bin/env python3
"""Write the table of results/published/README.md from the records beside it.

One row per repro with a record on a torch-tensorrt stack of results/published/matrix.yaml,
one column per such stack (its torch-tensorrt release), each cell a letter for the record
the page shows there (the store's index, ``StoreIndex.iter_shown``), read by the one
verdict rule (``rules.verdict.said``):

    F  fail            P  pass            c  cleared on the stand-in lane (a skip that decides)
    E  cannot tell: an error, crash, timeout or broken environment
    s  skipped, deciding nothing      ·  no record

Rows: the torch-tensorrt bugs first, then torchvision's and torch's (``rules.versions
.key_package`` of each repro's ``expect`` rules), each group by id.

    python3 scripts/published-table.py            # print the table
    python3 scripts/published-table.py --write    # put it in the README, between its markers
    python3 scripts/published-table.py --check    # exit 1 if the README's table differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from repromatrix.config.matrix import load_matrix  # noqa: E402
from repromatrix.rules.verdict import GOOD, said  # noqa: E402
from repromatrix.rules.versions import BUG_PACKAGES, key_package  # noqa: E402
from repromatrix.store.index import StoreIndex  # noqa: E402

STORE = ROOT / "results" / "published"
README = STORE / "README.md"
BEGIN = "<!-- table: made by scripts/published-table.py --write; edit the records, not this -->"
END = "<!-- end of table -->"


def letter(status: str, evidence: str) -> str:
    """A shown record's letter (the legend above)."""
    if status in ("fail", "pass"):
        return status[0].upper()
    if said(status, evidence) == GOOD:
        return "c"
    return "s" if status == "skip" else "E"


def table(store: Path = STORE) -> str:
    """The Markdown table of the records in ``store`` on its matrix's torch-tensorrt stacks."""
    matrix = load_matrix(store / "matrix.yaml")
    stacks = [s for s in matrix.stacks if s.kind == "pip" and s.torch_tensorrt]
    letters: dict[tuple[str, str], str] = {}
    with StoreIndex.open(store) as index:
        for _, rec in index.iter_shown([f"{s.id}--{r}" for s in stacks for r in matrix.repros]):
            letters[(rec.repro, rec.stack_id)] = letter(rec.status, rec.evidence_level)
    order = {p: n for n, p in enumerate(BUG_PACKAGES)}
    rows = sorted({r for r, _ in letters},
                  key=lambda r: (order[key_package(matrix.repros[r].expect)], r))
    head = ["repro", *(s.torch_tensorrt for s in stacks)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join([f"`{r}`", *(letters.get((r, s.id), "·") for s in stacks)]) + " |"
              for r in rows]
    return "\n".join(lines)


def with_table(text: str, made: str) -> str:
    """The README ``text`` with ``made`` between its markers."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return f"{text[:start]}\n{made}\n{text[end:]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="put the table in the README")
    parser.add_argument("--check", action="store_true", help="exit 1 if the README differs")
    args = parser.parse_args()
    made = table()
    if not (args.write or args.check):
        print(made)
        return 0
    text = README.read_text(encoding="utf-8")
    new = with_table(text, made)
    if args.check:
        if new != text:
            print(f"{README.relative_to(ROOT)}: its table is not the records' "
                  f"(scripts/published-table.py --write)", file=sys.stderr)
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
