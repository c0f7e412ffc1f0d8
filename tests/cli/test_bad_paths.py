"""Paths that are not what they claim (issue 19): a file where a folder is wanted, a
dangling symlink, a FIFO or a device in a repro folder, a file that holds no records.
Each is a clear exit 2 naming it, before anything is read, written or overwritten."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest
from support.cli import repromatrix

from repromatrix.config.matrix import load_matrix
from repromatrix.engines.images import requirements

META = 'META = {{"id": "{id}", "title": "{id} bug"}}\n'
MATRIX = "stacks: [{kind: pip, torch: '2.14.1', torch_tensorrt: none, index: pypi, tags: [default]}]\n"


def assert_refused(proc, *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "repromatrix: error: " in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    path = tmp_path / "m" / "matrix.yaml"
    path.parent.mkdir()
    path.write_text(MATRIX)
    return path


@pytest.mark.parametrize("make", ["file", "dangling", "under-a-file"])
def test_run_results_that_is_no_folder_is_refused(tmp_path, matrix, make):
    target = tmp_path / "results"
    if make == "dangling":
        target.symlink_to(tmp_path / "gone")
    else:
        target.write_text("keep me\n")
    given = target / "sub" if make == "under-a-file" else target
    proc = repromatrix("run", "--matrix", str(matrix), "--backend", "local", "--ca-bundle", "none",
                       "--results", str(given))
    assert_refused(proc, f"--results {given}", str(target))
    if make != "dangling":
        assert target.read_text() == "keep me\n", "nothing overwritten"
    else:
        assert not (tmp_path / "gone").exists(), "nothing made behind the link"


@pytest.mark.parametrize("content", ["stacks: []\n", "", "[1, 2]\n"])
def test_report_of_a_file_holding_no_records_overwrites_nothing(tmp_path, content):
    given = tmp_path / "matrix.yaml"
    given.write_text(content)
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("the previous page")
    proc = repromatrix("report", "--results", str(given), "--out", str(site))
    assert_refused(proc, f"--results {given}", "holds no results record")
    assert (site / "index.html").read_text() == "the previous page"
    assert sorted(p.name for p in site.iterdir()) == ["index.html"]


def test_a_huge_file_with_no_newline_is_refused_without_reading_it_whole(tmp_path):
    """The record check reads a bounded piece at a time: a 200 MB file with no newline costs
    that check tens of MB, never the whole file."""
    from repromatrix.cli.report import check_results_path
    from repromatrix.errors import UsageError

    huge = tmp_path / "results.jsonl"
    with huge.open("wb") as fh:
        for _ in range(200):
            fh.write(b"x" * (1 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(UsageError, match="holds no results record"):
            check_results_path(huge)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak >> 20} MB held"


def test_report_of_a_fifo_is_refused_without_reading_it(tmp_path):
    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)
    proc = repromatrix("report", "--results", str(fifo), "--out", str(tmp_path / "site"))
    assert_refused(proc, str(fifo), "not a regular file")
    assert not (tmp_path / "site").exists()


def test_report_out_that_is_a_file_is_refused(tmp_path):
    store = tmp_path / "results"
    store.mkdir()
    out = tmp_path / "site"
    out.write_text("not a folder")
    proc = repromatrix("report", "--results", str(store), "--out", str(out))
    assert_refused(proc, f"--out {out}")
    assert out.read_text() == "not a folder"


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder", "fifo-helper"])
def test_repro_folder_refuses_non_regular_files_without_reading(tmp_path, matrix, kind):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "one_bug.py").write_text(META.format(id="one_bug"))
    odd = mine / ("_helper.py" if kind == "fifo-helper" else "odd.py")
    if kind in ("fifo", "fifo-helper"):
        os.mkfifo(odd)
    elif kind == "dev-zero":
        odd.symlink_to("/dev/zero")
    else:
        odd.mkdir()
    command = "run" if kind == "fifo-helper" else "plan"  # a helper is read when a run hashes it
    extra = ["--backend", "local", "--ca-bundle", "none", "--results", str(tmp_path / "r")]
    proc = repromatrix(command, "--matrix", str(matrix), "--repros", str(mine),
                       *(extra if command == "run" else []))  # a hang fails on the timeout
    what = {"fifo": "a FIFO", "fifo-helper": "a FIFO", "dev-zero": "a character device",
            "folder": "a folder"}[kind]
    assert_refused(proc, str(odd), f"not a regular file ({what})")


def test_a_matrix_without_defaults_installs_what_its_repros_require(tmp_path, matrix):
    """The ONNX repro's META requires onnx and onnxscript: a pip stack installs them even
    when the matrix names no `defaults.packages`; a stack's own pin wins."""
    loaded = load_matrix(matrix)
    reqs = requirements(loaded.stacks[0], loaded.settings)
    assert {"onnx", "onnxscript"} <= set(reqs), reqs
    assert not any(r.split(">")[0] in ("cuda", "gpus") for r in reqs)
    assert reqs.count("torchvision==0.29.1") == 1 and "torchvision>=0.17" not in reqs
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(MATRIX.replace("index: pypi", "index: pypi, packages: ['onnx==1.17.0']"))
    loaded = load_matrix(pinned)
    reqs = requirements(loaded.stacks[0], loaded.settings)
    assert "onnx==1.17.0" in reqs and "onnx" not in reqs and "onnxscript" in reqs


def test_the_published_matrix_environments_are_unchanged_by_repro_needs():
    """defaults.packages already names the built-in repros' needs: same requirements, same
    order, so no image of the published matrix is rebuilt."""
    loaded = load_matrix(None)
    for stack in loaded.stacks:
        if stack.kind == "pip":
            assert requirements(stack, loaded.settings)[-3:] == ["onnx", "onnxscript", "numpy"]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_matrix_file_that_is_no_regular_file_is_refused_without_reading(tmp_path, kind):
    matrix = tmp_path / "matrix.yaml"
    if kind == "fifo":
        os.mkfifo(matrix)
    else:
        matrix.symlink_to("/dev/zero")
    proc = repromatrix("plan", "--matrix", str(matrix))  # a hang fails on the timeout
    assert_refused(proc, str(matrix), "not a regular file")


def test_a_script_that_is_a_fifo_is_refused_without_reading(tmp_path, matrix):
    script = tmp_path / "bug.py"
    os.mkfifo(script)
    proc = repromatrix("run", "--matrix", str(matrix), "--backend", "local", "--ca-bundle", "none",
                       "--script", str(script), "--results", str(tmp_path / "r"))
    assert_refused(proc, str(script), "not a regular file (a FIFO)")
