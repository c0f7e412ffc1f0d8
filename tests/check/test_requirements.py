"""check.requirements and check.environment: every input kind, and each bad input named."""

from __future__ import annotations

import os
import sys

import pytest

from repromatrix.check.environment import from_ngc, from_pins, from_probe, from_requirements
from repromatrix.check.requirements import read_requirements
from repromatrix.engines.interpreter import env_probe
from repromatrix.errors import UsageError

FREEZE = """\
# pip freeze of an environment, with what pip writes around it
--index-url https://pypi.org/simple
--extra-index-url https://download.pytorch.org/whl/cu124
numpy==2.1.0
torch==2.4.1+cu124 \\
    --hash=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
torch-tensorrt[extra]==2.4.0 ; python_version >= "3.8"  # extras and a marker
torchvision @ https://download.pytorch.org/whl/cu124/torchvision-0.19.1%2Bcu124-cp311-cp311-linux_x86_64.whl
onnx==1.16.0 ; python_version < "3.0"
-e git+https://github.com/org/mylib.git#egg=mylib
-c constraints.txt
-r more.txt
"""


def test_a_freeze_file_with_hashes_markers_extras_urls_and_includes(tmp_path):
    (tmp_path / "more.txt").write_text("onnxscript==0.1.0\n-r requirements.txt\n")  # a loop: read once
    req = tmp_path / "requirements.txt"
    req.write_text(FREEZE)
    packages, where, notes = read_requirements(req)
    assert packages["torch"] == "2.4.1+cu124" and packages["torch-tensorrt"] == "2.4.0"
    assert packages["torchvision"] == "0.19.1+cu124" and packages["onnxscript"] == "0.1.0"
    assert "onnx" not in packages  # its marker is false here
    assert where["torch"] == f"{req}:5"
    said = "\n".join(notes)
    assert "marker" in said and "editable" in said and "constraints" in said
    env = from_requirements(req)
    assert env["versions"]["torch"] == "2.4.1+cu124" and env["versions"]["torch_tensorrt"] == "2.4.0"
    # an editable line and a constraints file are not read: partial, torchvision as given
    assert not env["complete"] and env["kind"] == "pip" and env["inferred"] == {}


@pytest.mark.parametrize("text, needle", [
    ("numpy==2.0\n", "names no torch"),
    ("torch>=2.4\n", "not pinned"),
    ("torch @ git+https://github.com/pytorch/pytorch\n", "not pinned"),
    ("torch==2.4.1\nthis is not a requirement!\n", ":2: not a requirement"),
])
def test_a_requirements_file_that_cannot_say_the_versions_is_refused(tmp_path, text, needle):
    req = tmp_path / "r.txt"
    req.write_text(text)
    with pytest.raises(UsageError, match=needle):
        from_requirements(req)


def test_an_unreadable_or_irregular_requirements_file_is_refused(tmp_path):
    with pytest.raises(UsageError, match="cannot read"):
        from_requirements(tmp_path / "absent.txt")
    with pytest.raises(UsageError, match="not a regular file"):
        from_requirements(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="FIFO"):
        from_requirements(fifo)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"torch==2.4.1 # caf\xe9\n")
    with pytest.raises(UsageError, match="not UTF-8"):
        from_requirements(latin)


@pytest.mark.parametrize("pins, needle", [
    (["torchh==2.4.1"], 'did you mean "torch"'),
    (["torch==two"], "is not a version"),
    (["torch>=2.4"], "one exact version"),
    (["torch=2.4"], "not a pin"),
    (["torchvision==0.19.1"], "pin torch too"),
])
def test_bad_pins_are_refused(pins, needle):
    with pytest.raises(UsageError, match=needle):
        from_pins(pins)


def test_an_ngc_release_comes_from_the_table_and_an_unknown_one_is_refused():
    env = from_ngc("25.01")
    assert env["versions"]["ngc"] == "25.01" and env["versions"]["torch"].startswith("2.6.0a0")
    assert not env["complete"] and env["notes"]
    with pytest.raises(UsageError, match='--ngc 25.13: .*(did you mean|known)'):
        from_ngc("25.13")


def test_an_interpreter_without_torch_is_refused():
    """This suite's interpreter has no torch (the host never imports it)."""
    with pytest.raises(UsageError, match="has no working torch"):
        from_probe(sys.executable, env_probe(sys.executable))


@pytest.mark.torch
def test_an_interpreter_with_torch_is_read_from_its_probe():
    python = os.environ.get("REPROMATRIX_TEST_PY_T214")
    if not python:
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T214")
    env = from_probe(python, env_probe(python))
    assert env["kind"] == "python" and env["versions"]["torch"].startswith("2.14.1")
    assert env["complete"] and "torch" in env["packages"]
