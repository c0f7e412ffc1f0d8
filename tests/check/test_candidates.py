"""The upgrade's install command keeps the environment's CUDA build and its wheel index, or
says that the target torch has no such build (check.candidates)."""

from __future__ import annotations

from repromatrix.check.candidates import build, candidates, install
from repromatrix.config.compat import load_table


def env(**versions: str) -> dict:
    return {"kind": "pip", "versions": {"torch": None, "torchvision": None, "torch_tensorrt": None,
                                        "ngc": None, "python": None, **versions}}


def by_torch(found: list[dict], torch: str) -> dict:
    return next(c for c in found if c["versions"]["torch"] == torch)


def test_a_cuda_build_keeps_its_build_and_index():
    found = candidates(load_table(), env(torch="2.9.1+cu130", torchvision="0.24.1+cu130",
                                         torch_tensorrt="2.9.0"))
    up = by_torch(found, "2.14.0")
    assert up["install"] == ("pip install torch==2.14.0+cu130 torchvision==0.29.0+cu130 "
                             "torch-tensorrt==2.14.0 --index-url https://download.pytorch.org/whl/cu130 "
                             "--extra-index-url https://pypi.org/simple")
    assert up["versions"]["torch"] == "2.14.0"  # the versions stay the table's releases


def test_a_build_the_target_lacks_is_said_not_invented():
    table = load_table()
    assert "cu128" in table.torch["2.10.0"].indexes and "cu128" not in table.torch["2.14.0"].indexes
    found = candidates(table, env(torch="2.9.1+cu128", torchvision="0.24.1"))
    assert "--index-url https://download.pytorch.org/whl/cu128" in by_torch(found, "2.10.0")["install"]
    assert by_torch(found, "2.10.0")["install"].startswith("pip install torch==2.10.0+cu128 ")
    lacking = by_torch(found, "2.14.0")["install"]
    assert "+cu128" not in lacking and "--index-url" not in lacking
    assert lacking.startswith("pip install torch==2.14.0 torchvision==0.29.0  # ")
    assert "torch 2.14.0 has no cu128 build (its CUDA builds: cu126, cu130, cu132)" in lacking


def test_cpu_builds_and_pypi_wheels():
    table = load_table()
    assert build(table, "2.4.1+cpu") == "cpu" and build(table, "2.4.1+CU124") == "cu124"
    assert build(table, "2.4.1") is None and build(table, "2.10.0a0+b4e4ee81d3") is None
    new = {"torch": "2.5.0", "torchvision": "0.20.0", "torch_tensorrt": None}
    assert install(table, new, None) == "pip install torch==2.5.0 torchvision==0.20.0"
    assert install(table, new, "cpu") == ("pip install torch==2.5.0+cpu torchvision==0.20.0+cpu "
                                          "--index-url https://download.pytorch.org/whl/cpu "
                                          "--extra-index-url https://pypi.org/simple")
