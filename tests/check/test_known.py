"""check.known: a given version is a release the table knows, a combination it allows, and
what a partial input leaves out is taken as the table pairs it (or cannot tell)."""

from __future__ import annotations

import pytest

from repromatrix.check.command import check_answer
from repromatrix.check.decide import AFFECTED, CANNOT_TELL, NOT_AFFECTED
from repromatrix.check.environment import from_pins, from_probe, from_requirements
from repromatrix.check.known import closest
from repromatrix.check.records import snapshot_rows
from repromatrix.cli.check import catalog
from repromatrix.config.compat import load_table
from repromatrix.errors import UsageError

SIGNS = "filelock==3.16.1\ntyping-extensions==4.12.2\nsympy==1.13.1\nnetworkx==3.3\njinja2==3.1.4\n"


def answer(env: dict) -> dict:
    rows, _ = snapshot_rows()
    found = check_answer(catalog(), rows, {}, env, load_table())
    return {b["id"]: b for b in found["bugs"]}


def test_torchvision_not_given_is_taken_as_the_table_pairs_it():
    env = from_pins(["torch==2.4.1", "torch-tensorrt==2.4.0"])
    assert env["versions"]["torchvision"] == "0.19.1" and not env["complete"]
    assert env["inferred"] == {"torchvision": "0.19.1 (paired with torch 2.4.1 by the table)"}
    assert any("torchvision not given: taken as 0.19.1" in n for n in env["notes"])
    assert answer(env)["deform_conv2d_device"]["verdict"] == AFFECTED


def test_a_package_not_given_that_the_table_cannot_pair_cannot_tell():
    env = from_pins(["torch==2.14.1"])  # the table pairs 0.29.1 and 0.29.2; no torch-tensorrt
    assert env["versions"]["torchvision"] is None and env["inferred"] == {}
    bugs = answer(env)
    assert bugs["deform_conv2d_device"]["verdict"] == CANNOT_TELL
    assert "not given" in bugs["deform_conv2d_device"]["why"]
    assert bugs["tv_masks_to_boxes_empty"]["verdict"] == CANNOT_TELL


def test_only_a_complete_freeze_says_not_installed(tmp_path):
    partial = tmp_path / "partial.txt"
    partial.write_text("torch==2.4.1\ntorch-tensorrt==2.4.0\n")
    env = from_requirements(partial)
    assert not env["complete"] and env["versions"]["torchvision"] == "0.19.1"
    assert answer(env)["onnx_export_device"]["verdict"] == CANNOT_TELL
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("torch==2.4.1\ntorch-tensorrt==2.4.0\n" + SIGNS)
    env = from_requirements(freeze)
    assert env["complete"] and env["versions"]["torchvision"] is None and env["inferred"] == {}
    bugs = answer(env)
    assert bugs["deform_conv2d_device"]["verdict"] == NOT_AFFECTED
    assert "not installed" in bugs["deform_conv2d_device"]["why"]
    assert any("complete pip freeze" in n for n in env["notes"])


def test_torch_not_given_comes_from_a_torch_tensorrt_release_that_names_one():
    env = from_pins(["torch-tensorrt==2.6.0"])
    assert env["versions"]["torch"] == "2.6.0" and "torch" in env["inferred"]
    with pytest.raises(UsageError, match="torch-tensorrt==2.4.0 installs with torch 2.4.0 or 2.4.1"):
        from_pins(["torch-tensorrt==2.4.0"])


@pytest.mark.parametrize("pins, needle", [
    (["torch==2.41"], r'torch==2.41: not a torch release .*did you mean "2.4.1"'),
    (["torch==2.3.2"], r"torch==2.3.2: not a torch release the compatibility table knows"),
    (["torch==2.4.1", "torchvision==0.20.1"], r"torchvision==0.20.1 does not install with torch==2.4.1"),
    (["torch==2.5.1", "torch-tensorrt==2.4.0"],
     r"torch-tensorrt==2.4.0 does not install with torch==2.5.1: it requires torch >=2.4.0,<2.5.0"),
    (["torch==2.4.1", "python==3.13"], r"python==3.13: torch 2.4.1 has no wheels for Python 3.13"),
    (["torch==2.4.1", "torch-tensorrt==2.4.0", "python==3.7"], r"python==3.7: torch 2.4.1"),
])
def test_an_unknown_release_or_a_combination_the_table_rules_out_is_refused(pins, needle):
    with pytest.raises(UsageError, match=needle):
        from_pins(pins)


def test_a_release_newer_than_the_table_is_answered_with_a_warning():
    env = from_pins(["torch==2.99.0"])
    assert any("newer than every release the compatibility table knows" in n
               and "may be behind" in n for n in env["notes"])
    env = from_pins(["torch==2.4.1", "torch-tensorrt==2.40.0"])
    said = " ".join(env["notes"])
    assert "torch-tensorrt 2.40.0 is newer" in said and 'did you mean "2.4.0"' in said


def test_a_broken_release_is_named():
    env = from_pins(["torch==2.3.1", "torch-tensorrt==2.3.0"])
    assert any("2.3.0 is marked broken" in n and "3031" in n for n in env["notes"])


def test_a_pre_release_of_a_known_release_is_that_release():
    env = from_pins(["torch==2.5.0a0", "torch-tensorrt==2.5.0"])
    assert env["versions"]["torchvision"] == "0.20.0"


def test_an_interpreter_s_own_versions_are_notes_not_errors():
    probe = {"torch": "2.3.2", "torchvision": "0.20.1", "python": "3.11.7",
             "distributions": {"torch": "2.3.2", "torchvision": "0.20.1"}}
    env = from_probe("python3", probe)
    assert env["complete"] and env["inferred"] == {}
    assert any("as installed: answered anyway" in n for n in env["notes"])


@pytest.mark.parametrize("value, known, hint", [
    ("2.41", ["2.4.0", "2.4.1", "2.14.1"], '"2.4.1"'), ("2.3.2", ["2.3.0", "2.3.1"], '"2.3.1"'),
])
def test_closest_prefers_the_same_digits(value, known, hint):
    assert hint in closest(value, known)


def test_the_page_s_combinations_are_all_allowed():
    """The box only asks for combinations the table allows: none is refused."""
    from repromatrix.check.page import combinations, environment

    for combination in combinations(load_table()):
        environment(combination)
