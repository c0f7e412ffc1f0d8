"""The report's own cache beside its page (``report.cache``): its format is its own, and a
store with no index yet renders what a store with its index renders."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest
from support.sites import page_files as site_files

from repromatrix.cli import main
from repromatrix.report import cache as cache_mod
from repromatrix.report.cache import CACHE_NAME, RenderCache
from repromatrix.report.last_site import KEPT_NAME
from repromatrix.report.render import render_site
from repromatrix.store.index import INDEX_NAME

DATA = Path(__file__).resolve().parents[1] / "data" / "results"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)


def index_meta(store: Path) -> dict[str, str]:
    with sqlite3.connect(store / INDEX_NAME) as db:
        return dict(db.execute("SELECT key, value FROM meta"))


def test_a_report_cache_of_another_format_is_made_anew_and_the_store_index_left_alone(
        tmp_path, monkeypatch):
    store = tmp_path / "store"
    shutil.copytree(DATA / "every_status", store)
    out = tmp_path / "site"
    render_site([store], out, now=NOW)
    page, before = site_files(out), index_meta(store)
    with sqlite3.connect(store / CACHE_NAME) as db:
        assert db.execute("SELECT count(*) FROM pieces").fetchone()[0] > 0
    monkeypatch.setattr(cache_mod, "FORMAT", cache_mod.FORMAT + "-next")  # the report changed
    (out / KEPT_NAME).unlink()  # (else the render patches, reading no pieces)
    with sqlite3.connect(store / CACHE_NAME) as db:  # an older format's table, still large
        db.execute("CREATE TABLE bodies (cell TEXT PRIMARY KEY, detail BLOB)")
        db.executemany("INSERT INTO bodies VALUES (?, ?)",
                       [(str(n), b"x" * 4096) for n in range(500)])
    assert (store / CACHE_NAME).stat().st_size > 2_000_000
    render_site([store], out, now=NOW)
    assert (store / CACHE_NAME).stat().st_size < 1_000_000  # its space given back
    with sqlite3.connect(store / CACHE_NAME) as db:
        meta = dict(db.execute("SELECT key, value FROM meta"))
        cells = db.execute("SELECT count(*) FROM pieces").fetchone()[0]
    assert meta["format"] == cache_mod.FORMAT and cells > 0  # made anew, and filled again
    assert index_meta(store) == before  # the same index: format, epoch and settlings
    assert site_files(out) == page


def test_pieces_of_cells_no_longer_shown_go_once_they_are_a_tenth_of_the_table(tmp_path):
    """keep_only does not scan the table on every render: the pieces of cells a full render
    no longer shows go once they outnumber a tenth of its cells (and 100), heads and places
    alike, and every shown cell keeps its own."""
    def kept(cells: list[str]) -> list[tuple[str, str, bytes, bytes]]:
        return [(c, "k", b"head", b"markup") for c in cells]

    def placed(cells: list[str]) -> list[tuple[str, str, int, str]]:
        return [(c, "k", n, "source") for n, c in enumerate(cells)]

    shown = [f"pip-{n}--bug" for n in range(200)]
    with RenderCache(tmp_path / CACHE_NAME) as cache:
        cache.keep_pieces(kept([*shown, "gone-0--bug"]))
        cache.keep_placed(placed([*shown, "gone-0--bug"]))
        cache.keep_only(shown)  # one stale: it stays
        assert len(cache.pieces()) == 201 and len(cache.placed(["gone-0--bug"])) == 1
        gone = [f"gone-{n}--bug" for n in range(1, 121)]
        cache.keep_pieces(kept(gone))
        cache.keep_placed(placed(gone))
        cache.keep_only(shown)  # past the threshold: all go
        assert set(cache.pieces()) == set(shown) and not cache.placed(["gone-0--bug", *gone])
        assert cache.placed(shown)["pip-7--bug"] == ("k", 7, "source")


@pytest.mark.parametrize("name", ["every_status", "damaged", "hostile"])
def test_a_store_with_no_index_yet_renders_what_it_renders_with_its_index(
        name, tmp_path, monkeypatch):
    """``repromatrix report`` on a store written as files (as one restored from a git branch
    is: no ``.index.sqlite``) writes the page a store with its index writes, byte for byte."""

    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):  # noqa: ANN001, ANN206 - datetime's own signature
            return NOW

    monkeypatch.setattr("repromatrix.report.render.datetime", Clock)
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    shutil.copytree(DATA / name, store)
    assert main(["report", "--results", "store", "--out", "warm-up"]) == 0  # the index made
    assert (store / INDEX_NAME).exists()
    assert main(["report", "--results", "store", "--out", "with-index"]) == 0
    for path in store.glob(INDEX_NAME + "*"):
        path.unlink()  # as a store restored from a git branch is
    assert main(["report", "--results", "store", "--out", "no-index"]) == 0
    assert site_files(tmp_path / "with-index") and \
        site_files(tmp_path / "with-index") == site_files(tmp_path / "no-index")


@pytest.mark.parametrize("name", ["every_status", "damaged", "hostile"])
def test_every_cell_of_a_chunk_reads_back_as_it_was_written(name, tmp_path):
    """The cache keeps no copy of a cell's drawer detail and environment: they are read back
    from the chunk a render wrote them in (``chunks.read_entries``), byte for byte, hostile
    text included, and a chunk that is not one gives nothing (the cell is made again)."""
    from repromatrix.report.chunks import read_entries, read_payload

    store = tmp_path / "store"
    shutil.copytree(DATA / name, store)
    out = tmp_path / "site"
    render_site([store], out, now=NOW)
    with RenderCache(store / CACHE_NAME) as cache:
        placed = cache.placed(cache.pieces())
    assert placed
    chunks: dict[int, list[str]] = {}
    for cell, (_, number, _) in placed.items():
        chunks.setdefault(number, []).append(cell)
    for number, cells in chunks.items():
        path = out / "data" / f"c{number}.js"
        entries = read_entries(path, set(cells))
        assert set(entries) == set(cells)
        data = read_payload(path)[1].encode("utf-8")
        envs = list(dict.fromkeys(env for _, env in entries.values()))
        assert all(detail in data for detail, _ in entries.values())
        assert data.startswith(b'{"envs":[%s],' % b",".join(envs))
    broken = tmp_path / "broken.js"
    broken.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])
    assert read_entries(broken, set(cells)) == {}


def test_a_render_into_another_folder_copies_what_an_earlier_one_made(tmp_path, monkeypatch):
    """The cache lives beside the store's index, so a render into a new folder finds every
    cell's pieces there and copies each chunk and the box's data from the folder a render
    made them in, while those bytes are the ones made: no cell is made, the box is not
    worked out again, and the page is the one made. A copy whose file changed or went is
    made again; several stores keep their cache in the folder rendered into."""
    from repromatrix.report import cell, verdicts

    made: list[str] = []
    boxes: list[int] = []
    make_pieces, verdicts_script = cell.make_pieces, verdicts.verdicts_script

    def counted(summary, *args, **kwargs):  # noqa: ANN001, ANN202 - passed through
        made.append(summary["view"]["id"])
        return make_pieces(summary, *args, **kwargs)

    def box(*args):  # noqa: ANN002, ANN202
        boxes.append(1)
        return verdicts_script(*args)

    monkeypatch.setattr(cell, "make_pieces", counted)
    monkeypatch.setattr(verdicts, "verdicts_script", box)
    store = tmp_path / "store"
    shutil.copytree(DATA / "every_status", store)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / CACHE_NAME).write_bytes(b"an earlier release's cache, beside the page")
    render_site([store], tmp_path / "a", now=NOW)
    assert (store / CACHE_NAME).exists() and not (tmp_path / "a" / CACHE_NAME).exists()
    assert made and boxes == [1]
    page = site_files(tmp_path / "a")
    made.clear()
    render_site([store], tmp_path / "b", now=NOW)
    assert made == [] and boxes == [1] and site_files(tmp_path / "b") == page
    chunks = sorted((tmp_path / "a" / "data").glob("c*.js"))
    assert len(chunks) > 1
    changed = chunks[0]
    changed.write_bytes(changed.read_bytes() + b"\n")  # no longer the bytes made
    render_site([store], tmp_path / "c", now=NOW)
    assert made and len(made) <= 50 and site_files(tmp_path / "c") == page  # one chunk's cells
    made.clear()
    shutil.rmtree(tmp_path / "a")  # the folder the others were made in goes
    render_site([store], tmp_path / "d", now=NOW)
    assert made and site_files(tmp_path / "d") == page and boxes == [1, 1]
    made.clear()
    render_site([store], tmp_path / "e", now=NOW)  # each made again where "d" made it
    assert made == [] and site_files(tmp_path / "e") == page
    render_site([store, DATA / "damaged"], tmp_path / "merged", now=NOW)
    assert (tmp_path / "merged" / CACHE_NAME).exists()  # several stores: beside the page
