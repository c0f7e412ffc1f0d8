"""The closing summary: undecided cells sorted by what this machine lacked."""

from __future__ import annotations

from repromatrix.run.outlook import outlook
from repromatrix.store.record import CellRun, EngineFacts, make_result, unavailable_results


def cell(stack: str, repro: str = "r") -> CellRun:
    return CellRun(run_id="run1", stack={"id": stack}, repro=repro, repro_sha256="", cache_key="k",
                   backend="venv")


def runner(status: str, stage_message: str = "") -> dict:
    stages = [{"name": "compile", "status": status, "role": "main", "message": stage_message}]
    return {"status": status, "message": stage_message, "stages": stages}


def test_undecided_cells_are_sorted_by_what_they_lacked():
    records = [
        make_result(cell("a"), runner("fail", "AttributeError: ..."), {"python": "3.11"}, None),
        make_result(cell("b"), runner("skip", "no CUDA device: torch.cuda.is_available() is False"),
                    {"python": "3.11"}, None),
        make_result(cell("c"), runner("skip", "needs real TensorRT past run_decompositions"),
                    {"python": "3.11"}, None),
        make_result(cell("d"), None, None, EngineFacts(reason="environment build failed")),
        *unavailable_results([cell("ngc-23.12")], "cannot be made here by docker|venv: docker: "
                             "nvcr.io/nvidia/pytorch:23.12-py3 for ngc-23.12: no such host"),
        *unavailable_results([cell("pip-cu124")], "cannot be made here by docker|venv: venv: "
                             "download.pytorch.org:443: DNS: the name does not resolve"),
    ]
    view = outlook(records)
    assert view.decided == 1 and view.undecided == 5
    text = "\n".join(view.lines())
    assert "1 need a CUDA GPU: b--r" in text
    assert "1 need real TensorRT: c--r" in text
    assert "1 need docker with access to NVIDIA's registry (NGC images): ngc-23.12--r" in text
    assert "1 need the PyTorch wheel index (or a mirror) for their CUDA pin: pip-cu124--r" in text
    assert "1 need an environment that builds and starts here: d--r" in text
    assert "would decide up to 4 more" in text


def test_nothing_to_say_when_every_cell_was_decided():
    records = [make_result(cell("a"), runner("pass"), {"python": "3.11"}, None)]
    assert outlook(records).lines() == []
