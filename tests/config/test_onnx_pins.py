"""A pip stack's onnxscript and onnxruntime pins: checked against the compat table's
``onnx`` section, named in the stack id and spec, installed in place of defaults.packages'."""

from __future__ import annotations

import textwrap
from importlib import resources
from pathlib import Path

import pytest

from repromatrix.config.compat import TABLE_FILE, load_table, parse_table
from repromatrix.config.compat import ConfigError as TableError
from repromatrix.config.matrix import load_matrix
from repromatrix.config.yamlfile import load_yaml
from repromatrix.engines.images import requirements
from repromatrix.errors import ConfigError

META = 'META = {"id": "onnx_export_device", "title": "t", "upstream": [], "expect": []}\n'
HEAD = """\
defaults:
  packages: [onnx, onnxscript]
repros: all
stacks:
"""


def load(tmp_path: Path, stack: str):
    repros = tmp_path / "repros"
    repros.mkdir(exist_ok=True)
    (repros / "onnx_export_device.py").write_text(META)
    path = tmp_path / "matrix.yaml"
    path.write_text(HEAD + "  - " + textwrap.dedent(stack) + "\n")
    return load_matrix(path, repros)


def test_a_pin_names_the_stack_and_takes_the_place_of_the_default_package(tmp_path):
    m = load(tmp_path, '{kind: pip, torch: "2.9.1", torchvision: none, torch_tensorrt: none, '
                       'onnxscript: "0.5.6", onnxruntime: "1.23", index: pypi}')
    stack = m.stacks[0]
    assert stack.id == "pip-torch2.9.1-pypi-py3.11-osc0.5.6-ort1.23.2-notv"
    assert (stack.onnxscript, stack.onnxruntime) == ("0.5.6", "1.23.2")  # "1.23": newest 1.23.x
    assert stack.spec()["onnxscript"] == "0.5.6"
    reqs = requirements(stack, m.settings)
    assert "onnxscript==0.5.6" in reqs and "onnxscript" not in reqs and "onnx" in reqs
    assert "onnxruntime==1.23.2" in reqs


def test_without_a_pin_the_spec_and_id_are_as_before(tmp_path):
    stack = load(tmp_path, '{kind: pip, torch: "2.9.1", torch_tensorrt: none, index: pypi}').stacks[0]
    assert "onnxscript" not in stack.spec() and "osc" not in stack.id
    assert "onnxscript" in requirements(stack, load_matrix(tmp_path / "matrix.yaml",
                                                           tmp_path / "repros").settings)


@pytest.mark.parametrize(("value", "words"), [
    ('"0.5.5"', 'stacks[0].onnxscript: 0.5.5 is not a known release (did you mean "0.5.'),
    ('"9"', "stacks[0].onnxscript: 9 is not a known release"),
    ("0.5", "stacks[0].onnxscript: expected a version string, got the number 0.5: quote it"),
])
def test_an_unknown_or_unquoted_onnxscript_is_named_with_file_key_and_value(tmp_path, value, words):
    with pytest.raises(ConfigError) as info:
        load(tmp_path, f'{{kind: pip, torch: "2.9.1", onnxscript: {value}}}')
    text = str(info.value)
    assert "matrix.yaml" in text and words in text


def test_an_ngc_stack_takes_no_onnxscript_pin(tmp_path):
    with pytest.raises(ConfigError) as info:
        load(tmp_path, '{kind: ngc, ngc: "25.01", onnxscript: "0.5.6"}')
    assert "stacks[0]" in str(info.value) and "onnxscript" in str(info.value)


def test_the_table_knows_the_final_releases_only_and_refuses_an_unknown_package():
    osc = load_table().onnx["onnxscript"]
    assert "0.5.6" in osc and "0.5.7" in osc and "0.5.5" not in osc  # 0.5.5 had dev builds only
    assert list(osc) == sorted(osc, key=lambda v: tuple(map(int, v.split("."))))
    raw = load_yaml(resources.files("repromatrix").joinpath(TABLE_FILE).read_bytes(), "t.yaml")
    raw["onnx"] = {"onnxscrpt": ["0.1.0"]}
    with pytest.raises(TableError) as info:
        parse_table(raw, "t.yaml")
    assert 'onnx.onnxscrpt: unknown package (did you mean "onnxscript"?)' in str(info.value)
    raw["onnx"] = {"onnxscript": ["0.1.0", "next"]}
    with pytest.raises(TableError) as info:
        parse_table(raw, "t.yaml")
    assert "onnx.onnxscript: 'next' is not a version" in str(info.value)
