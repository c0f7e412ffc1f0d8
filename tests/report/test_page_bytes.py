"""The page, byte for byte: golden result sets rendered by this tree against the files a
render of the same sets wrote before the house moved (tests/data/golden_site).

Each set is rendered from a relative path with a fixed clock, so nothing but the harness
decides the bytes. The static assets are copied as they ship, so they are compared with
the shipped files (``report/static``) rather than kept four times; so is the check box's
``data/environments.js``, made from the shipped compatibility table alone (it changes with
the table's weekly update, not with the page), compared with what the table makes now.
``REPROMATRIX_WRITE_GOLDEN=1`` rewrites the kept files: do that only in
a commit that says which change of the page it records.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from repromatrix.model import Repro
from repromatrix.paths import report_dir
from repromatrix.report.chunks import read_payload
from repromatrix.report.data_files import RESULTS
from repromatrix.report.render import render_site
from repromatrix.report.verdicts import ENVIRONMENTS, environments_script

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "golden_site"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)
CATALOG = {"deform_conv2d_device": Repro(
    id="deform_conv2d_device", path="repros/deform_conv2d_device.py",
    title="deform_conv2d device mismatch (TRT #3556)",
    upstream=("https://github.com/pytorch/TensorRT/issues/3556",),
    expect=({"when": {"torch_tensorrt": ">=2.4,<2.5"}, "status": "fail", "note": "TRT #3556"},
            {"when": {"torch_tensorrt": ">=2.5"}, "status": "pass", "note": "fixed in 2.5.0"}),
    description="deform_conv2d inside a compiled graph mixes devices.",
)}
# name -> the golden result sets it renders together
TABLE_MADE = f"data/{ENVIRONMENTS}"  # made from the shipped table alone
CHUNK = re.compile(r"data/c\d+\.js")
SITES = {
    "every_status": ("every_status",),
    "hostile": ("hostile",),
    "damaged": ("damaged",),
    "two_stores": ("sparse", "single_cell"),
}


def site_files(out: Path) -> dict[str, bytes]:
    """Every file a render made, but its own caches (dot files) and the copied assets."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.relative_to(out).parts[0] != "static"
            and p.relative_to(out).as_posix() != TABLE_MADE
            and not any(part.startswith(".") for part in p.relative_to(out).parts)}


def compared(files: dict[str, bytes], out: Path) -> dict[str, bytes]:
    """``files`` with each data chunk and the records as their JSON: the compressed bytes
    may differ between zlib builds (zlib-ng), the JSON is the page's."""
    def text(rel: str, data: bytes) -> bytes:
        if CHUNK.fullmatch(rel):
            return read_payload(out / rel)[1].encode("utf-8")
        return gzip.decompress(data) if rel == RESULTS else data

    return {rel: text(rel, data) for rel, data in files.items()}


@pytest.mark.parametrize("name", sorted(SITES))
def test_the_page_is_byte_for_byte_what_it_was(name: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    stores = []
    for set_name in SITES[name]:
        shutil.copytree(DATA / "results" / set_name, tmp_path / "stores" / set_name)
        stores.append(Path("stores") / set_name)
    render_site(stores, Path("site"), CATALOG, now=NOW)
    written = site_files(tmp_path / "site")
    if os.environ.get("REPROMATRIX_WRITE_GOLDEN") == "1":
        shutil.rmtree(GOLDEN / name, ignore_errors=True)
        for rel, data in written.items():
            (GOLDEN / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / name / rel).write_bytes(data)
    kept = compared(site_files(GOLDEN / name), GOLDEN / name)
    written = compared(written, tmp_path / "site")
    assert sorted(written) == sorted(kept)
    changed = [rel for rel in kept if written[rel] != kept[rel]]
    assert not changed, f"{name}: these files differ from the kept render: {changed}"
    shipped = {p.name: p.read_bytes() for p in (report_dir() / "static").iterdir() if p.is_file()}
    copied = {p.name: p.read_bytes() for p in (tmp_path / "site" / "static").iterdir()}
    assert copied == shipped
    assert (tmp_path / "site" / TABLE_MADE).read_text(encoding="utf-8") == environments_script()
