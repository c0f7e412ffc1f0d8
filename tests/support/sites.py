"""Reading a rendered site in tests: golden result sets, a tiny DOM from html.parser, and the
grid, page data and detail chunks it holds."""

from __future__ import annotations

import gzip
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

from repromatrix.model import Repro
from repromatrix.report.chunks import read_payload
from repromatrix.report.render import render_site
from repromatrix.store.record import SCHEMA_VERSION, Result

ATOM = "{http://www.w3.org/2005/Atom}"  # the Atom feed's namespace
DATA = Path(__file__).resolve().parents[1] / "data" / "results"
STATUSES = ["pass", "fail", "error", "crash", "timeout", "skip", "broken"]
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

DEFORM = Repro(
    id="deform_conv2d_device", path="repros/deform_conv2d_device.py",
    title="deform_conv2d device mismatch (TRT #3556)",
    upstream=("https://github.com/pytorch/TensorRT/issues/3556", "javascript:alert(1)"),
    expect=({"when": {"torch_tensorrt": ">=2.4,<2.5"}, "status": "fail", "note": "TRT #3556"},
            {"when": {"torch_tensorrt": ">=2.5"}, "status": "pass", "note": "fixed in 2.5.0"}),
    description="deform_conv2d inside a compiled graph mixes devices.",
)
CATALOG = {"deform_conv2d_device": DEFORM}


# ----------------------------------------------------------------- a tiny DOM from html.parser


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self):
        for c in self.children:
            if isinstance(c, Node):
                yield c
                yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        out = []
        for n in self.iter():
            if tag and n.tag != tag or cls and cls not in n.classes:
                continue
            if all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                out.append(n)
        return out

    def find(self, *args, **kwargs) -> Node:
        found = self.find_all(*args, **kwargs)
        assert found, f"no element {args} {kwargs}"
        return found[0]


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.cur = Node("#document", {}, None)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, dict(attrs), self.cur))

    def handle_endtag(self, tag):
        node = self.cur
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None, f"unbalanced </{tag}>"
        self.cur = node.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(path: Path) -> Node:
    builder = TreeBuilder()
    builder.feed(path.read_text(encoding="utf-8"))
    builder.close()
    assert builder.cur is builder.root, "unclosed elements"
    return builder.root


def golden(tmp_path: Path, name: str) -> Path:
    """A copy of a golden result set (the report keeps an index in the folder it reads)."""
    dest = tmp_path / "golden" / name
    if not dest.exists():
        shutil.copytree(DATA / name, dest)
    return dest


def render(tmp_path: Path, *sets: str, repros=CATALOG):
    out = tmp_path / "site"
    summary = render_site([golden(tmp_path, s) for s in sets], out, repros)
    return summary, parse(out / "index.html"), out


def matrix(doc: Node) -> tuple[list[str], list[str], dict[tuple[str, str], Node]]:
    table = doc.find("table", id="matrix")
    cols = [th.attrs["data-repro"] for th in table.find_all("th", cls="repro")]
    rows, cells = [], {}
    for tr in table.find("tbody").find_all("tr"):
        if "group" in tr.classes:
            continue
        rows.append(tr.attrs["data-stack"])
        for td in tr.find_all("td", cls="cell"):
            cells[(tr.attrs["data-stack"], td.attrs["data-repro"])] = td
    return rows, cols, cells


def script_data(doc: Node) -> dict:
    return json.loads(doc.find("script", id="report-data").text())


def site_text(out: Path) -> str:
    """The site's every-record file (results.json.gz) as its JSON text."""
    return gzip.decompress((out / "results.json.gz").read_bytes()).decode("utf-8")


def page_files(out: Path) -> dict[str, bytes]:
    """Every file of a rendered site but the render's own caches (dot files: the render state,
    the kept site, the report's cache), which are not part of the page; results.json.gz as
    its JSON (its gzip members are the renders that added records: the same text, framed
    as the folder's history made it)."""
    return {p.relative_to(out).as_posix(): gzip.decompress(p.read_bytes())
            if p.relative_to(out).as_posix() == "results.json.gz" else p.read_bytes()
            for p in sorted(out.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(out).parts)}


def site_records(out: Path) -> dict:
    """The site's every-record file, read."""
    return json.loads(site_text(out))


def chunk_data(out: Path) -> dict:
    """Every data chunk of a site, merged: cells by id, each cell's env rows and chunk number."""
    merged: dict = {"cells": {}, "envs": {}, "chunk_of": {}}
    for path in (out / "data").glob("c*.js"):
        number, text = read_payload(path)
        payload = json.loads(text)
        for cid, cell in payload["cells"]:
            merged["cells"][cid] = cell
            merged["envs"][cid] = payload["envs"][cell["env"]]
            merged["chunk_of"][cid] = int(number)
    return merged



def result(**over) -> Result:
    base = {"schema_version": SCHEMA_VERSION, "run_id": "r", "cell": "s--r", "repro": "r",
            "status": "fail", "stack": {"id": "s"}}
    return Result.from_dict({**base, **over})


def history_record(stack: str, repro: str, run: int, status: str, *, tags=(), torch: str = "2.4.1",
           message: str = "m", workaround: str | None = None) -> Result:
    day = f"2026-11-{run + 1:02d}"
    return Result.from_dict({
        "schema_version": SCHEMA_VERSION, "run_id": f"run-{run}", "cell": f"{stack}--{repro}",
        "stack": {"id": stack, "kind": "pip", "torch": torch, "tags": list(tags)}, "repro": repro,
        "status": status, "message": message, "workaround": workaround, "host": "h",
        "stages": [{"name": "eager", "role": "main", "status": status},
                   {"name": "fix", "role": "workaround", "status": workaround or "skip"}],
        "started_at": f"{day}T00:00:00+00:00", "finished_at": f"{day}T00:01:00+00:00",
    })


def chunk_cells(out: Path) -> dict[str, dict]:
    """Every data chunk's cells by id (what the drawer reads)."""
    cells = {}
    for path in (out / "data").glob("c*.js"):
        cells.update(dict(json.loads(read_payload(path)[1])["cells"]))
    return cells
