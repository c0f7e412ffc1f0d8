"""matrix.yaml loading: the published matrix validates; every bad input is named."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from repromatrix import paths
from repromatrix.config.matrix import load_matrix, with_overrides
from repromatrix.errors import ConfigError

META = 'META = {{"id": "{id}", "title": "{id} bug", "upstream": [], "expect": []}}\n'


@pytest.fixture
def repros(tmp_path: Path) -> Path:
    d = tmp_path / "repros"
    d.mkdir()
    for rid in ("deform_conv2d_device", "onnx_export_device"):
        (d / f"{rid}.py").write_text(META.format(id=rid))
    (d / "protocol.py").write_text("# not a repro\n")
    return d


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "matrix.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def load(tmp_path: Path, repros: Path, text: str):
    return load_matrix(write(tmp_path, text), repros)


def error(tmp_path: Path, repros: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, repros, text)
    return str(info.value)


def test_published_matrix_validates_every_stack():
    m = load_matrix(paths.default_matrix())
    pip = [s for s in m.stacks if s.kind == "pip"]
    ngc = [s for s in m.stacks if s.kind == "ngc"]
    assert {s.torch.rsplit(".", 1)[0] for s in pip} >= {f"2.{n}" for n in range(2, 16)}
    assert ngc[0].ngc == "23.12" and ngc[-1].ngc == "26.09"
    assert all(s.torchvision for s in pip)
    # torch 2.15 has no torch-tensorrt release yet
    assert all(s.torch_tensorrt for s in pip if not s.torch.startswith("2.15."))
    assert len({s.id for s in m.stacks}) == len(m.stacks)
    assert any("default" in s.tags for s in m.stacks)
    assert set(m.repros) and all(s.repros == tuple(m.repros) for s in m.stacks)


def test_minimal_matrix_resolves_and_derives_the_id(tmp_path, repros):
    m = load(tmp_path, repros, """
        stacks:
          - {kind: pip, torch: "2.4"}
          - {kind: ngc, ngc: "24.05", repros: [onnx_export_device]}
          - {kind: local, id: mybox, interpreter: /usr/bin/python3}
    """)
    assert [s.id for s in m.stacks] == ["pip-torch2.4.1-trt2.4.0-cu124-py3.11", "ngc-24.05", "mybox"]
    assert m.stacks[0].repros == ("deform_conv2d_device", "onnx_export_device")
    assert m.stacks[1].repros == ("onnx_export_device",)
    assert m.stacks[1].torch.startswith("2.4.0a0")


def test_defaults_are_parsed_with_paths_relative_to_the_file(tmp_path, repros):
    (tmp_path / "wheels").mkdir()
    (tmp_path / "ca.pem").write_text("pem")
    m = load(tmp_path, repros, """
        defaults:
          python: "3.10"
          base_images: {"python:3.10-slim": "local/py:3.10"}
          ca_bundle: ca.pem
          find_links: [wheels]
          repro_timeout: 30
        stacks: [{kind: pip, torch: "2.6"}]
    """)
    s = m.settings
    assert s.python == "3.10" and s.repro_timeout == 30
    assert s.ca_bundle == str(tmp_path / "ca.pem") and s.find_links == (str(tmp_path / "wheels"),)
    assert m.stacks[0].python == "3.10"


@pytest.mark.parametrize("text, expected", [
    ("stacks: [{kind: pip, torch: '2.5', torchvison: '0.20.1'}]",
     'matrix.yaml: stacks[0].torchvison: unknown key (did you mean "torchvision"?)'),
    ("defaults: {pyhton: '3.11'}\nstacks: [{kind: pip, torch: '2.5'}]",
     'defaults.pyhton: unknown key (did you mean "python"?)'),
    ("stack: []", 'stack: unknown key (did you mean "stacks"?)'),
    ("defaults: {repro_timeout: soon}\nstacks: [{kind: pip, torch: '2.5'}]",
     "defaults.repro_timeout: expected a number, got 'soon'"),
    ("stacks: [{kind: pip, torch: '2.5', tags: default}]", "stacks[0].tags: expected a list"),
    ("stacks: [{kind: pip, torch: [2.5]}]", "stacks[0].torch: expected a version string"),
    ("stacks: [{kind: pip, torch: '2.5', repros: [deform_conv2d]}]",
     "stacks[0].repros[0]: unknown repro 'deform_conv2d' (did you mean \"deform_conv2d_device\"?)"),
    ("repros: [nope]\nstacks: [{kind: pip, torch: '2.5'}]", "repros[0]: unknown repro 'nope'"),
    ("stacks: [{kind: conda, torch: '2.5'}]", "stacks[0].kind: unknown stack kind 'conda'"),
    ("stacks: [{kind: pip, torch: '2.4.9'}]", "stacks[0].torch: 2.4.9 is not a known release"),
    ("stacks: [{kind: pip, torch: '2.5.1', torch_tensorrt: '2.4.0'}]",
     "stacks[0].torch_tensorrt: 2.4.0 needs torch >=2.4.0,<2.5.0, got 2.5.1"),
    ("stacks: [{kind: pip, torch: '2.4', index: cu130}]",
     "stacks[0].index: torch 2.4.1 was never published for cu130"),
    ("stacks: [{kind: pip, torch: '2.14', python: '3.8'}]",
     "stacks[0].python: torch 2.14.1 has no wheels for Python 3.8"),
    ("stacks: [{kind: ngc, ngc: '25.07'}]", "stacks[0].ngc: 25.07 is not a known NGC PyTorch release"),
    ("stacks: [{kind: pip}]", "stacks[0].torch: a pip stack needs `torch:`"),
    ("stacks: [{kind: local}]", "stacks[0].interpreter: a local stack needs"),
    ("stacks: [{kind: pip, torch: '2.5'}, {kind: pip, torch: '2.5.1'}]",
     "stacks[1]: duplicate stack id 'pip-torch2.5.1-trt2.5.0-cu124-py3.11' (also stacks[0])"),
    ("stacks: [{kind: pip, torch: '2.5', id: 'a/b'}]", "stacks[0].id: id 'a/b' must be"),
    ("stacks: []", "stacks: no stacks"),
    ("stacks:\n  - {kind: pip, torch: '2.5'\n  - {kind: pip}\n", "line 3: malformed YAML"),
    ("- just a list", "must be a mapping"),
])
def test_bad_input_names_file_key_and_value(tmp_path, repros, text, expected):
    assert expected in error(tmp_path, repros, text)


def test_missing_file_is_a_config_error(tmp_path, repros):
    with pytest.raises(ConfigError, match="cannot read"):
        load_matrix(tmp_path / "absent.yaml", repros)


def test_bad_repro_meta_names_the_repro_file(tmp_path, repros):
    (repros / "broken_one.py").write_text("META = {'id': 'broken_one', 'oops': 1}\n")
    msg = error(tmp_path, repros, "stacks: [{kind: pip, torch: '2.5'}]")
    assert "broken_one.py: META: unknown META keys ['oops']" in msg


def test_a_repro_kind_is_one_of_the_four(tmp_path, repros):
    from repromatrix.config.catalog import read_repro

    (repros / "kinded.py").write_text("META = {'id': 'kinded', 'kind': 'breaking-change'}\n")
    assert read_repro(repros / "kinded.py").kind == "breaking-change"
    (repros / "odd_kind.py").write_text("META = {'id': 'odd_kind', 'kind': 'regression'}\n")
    msg = error(tmp_path, repros, "stacks: [{kind: pip, torch: '2.5'}]")
    assert "odd_kind.py: META.kind: unknown kind 'regression'; one of bug, silent-wrong-output" in msg


def test_overrides_from_arguments_and_environment(tmp_path, repros, monkeypatch):
    m = load(tmp_path, repros, "stacks: [{kind: pip, torch: '2.5'}]")
    monkeypatch.setenv("REPROMATRIX_BASE_IMAGES", "python:3.11-slim=local/a")
    s = with_overrides(m.settings, base_images=["nvcr.io/nvidia/pytorch:24.05-py3=mirror/ngc:24.05"])
    assert s.base_images == {"python:3.11-slim": "local/a",
                             "nvcr.io/nvidia/pytorch:24.05-py3": "mirror/ngc:24.05"}
    with pytest.raises(ConfigError, match="expected PUBLIC=LOCAL"):
        with_overrides(m.settings, base_images=["nonsense"])
    with pytest.raises(ConfigError, match="--ca-bundle"):
        with_overrides(m.settings, ca_bundle=str(tmp_path / "missing.pem"))


def test_ids_tell_apart_stacks_that_differ_only_in_torchvision_or_packages(tmp_path, repros):
    m = load(tmp_path, repros, """
        stacks:
          - {kind: pip, torch: "2.14.1"}
          - {kind: pip, torch: "2.14.1", torchvision: "0.29.2"}
          - {kind: pip, torch: "2.14.1", torchvision: none}
          - {kind: pip, torch: "2.14.1", packages: [timm]}
    """)
    base = "pip-torch2.14.1-trt2.14.0-cu130-py3.11"
    assert [s.id for s in m.stacks][:3] == [base, base + "-tv0.29.2", base + "-notv"]
    assert m.stacks[3].id.startswith(base + "-pkgs")


def test_check_plain_is_exported_for_command_line_and_environment_values():
    from repromatrix.config.matrix import check_plain

    assert check_plain("mirror/py:3.11", "--base-image") == "mirror/py:3.11"
    with pytest.raises(ConfigError) as info:
        check_plain("a\x1b]0;x\x07", "--base-image", "env")
    assert str(info.value).startswith("env: --base-image: control character \\x1b at position 1")
    with pytest.raises(ConfigError, match="whitespace at position 1"):
        check_plain("a b", "REPROMATRIX_BASE_IMAGES", spaces=False)
    with pytest.raises(ConfigError, match="too long"):
        check_plain("x" * 5000, "--find-links")


def test_torch_2_15_stack_is_published_and_plan_states_the_pairing(capsys):
    """torchvision 0.29.2 comes with torch 2.15.0 by its requirement: plan says how sure that is."""
    from repromatrix.cli import main

    m = load_matrix(paths.default_matrix())
    (stack,) = [s for s in m.stacks if s.kind == "pip" and s.torch == "2.15.0"]
    assert stack.torchvision == "0.29.2"
    assert main(["plan", "--all", "-k", stack.id]) == 0
    out = capsys.readouterr().out
    assert "note: torchvision 0.29.2 with torch 2.15.0: pairing confidence M" in out
