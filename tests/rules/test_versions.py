"""rules.versions: how versions compare, which rule applies, which package a bug is about."""

from __future__ import annotations

import pytest

from repromatrix.rules.versions import (
    boundary_version,
    first_rule,
    key_package,
    normalize_version,
    when_holds,
)


@pytest.mark.parametrize("text, expected", [
    ("2.4.0a0+07cecf4168", "2.4.0a0"), ("2.4.1+cu124", "2.4.1"), ("2.5.0.dev0", "2.5.0.dev0"),
    ("10.3.0.nv24.05", "10.3.0"), ("24.05", "24.5"), ("2.10.0", "2.10.0"),
])
def test_normalize_version(text, expected):
    assert str(normalize_version(text)) == expected


def test_normalize_version_junk():
    assert normalize_version("unknown") is None and normalize_version(None) is None


@pytest.mark.parametrize("text, expected", [
    ("2.14.0a0+b2c75dd062", "2.14.0"), ("2.3.0.dev0", "2.3.0"), ("2.5.0rc1", "2.5.0"),
    ("2.4.1+cu124", "2.4.1"), ("2.5.0.post1", "2.5.0.post1"), ("junk", None),
])
def test_boundary_version_counts_a_pre_release_as_its_release(text, expected):
    found = boundary_version(text)
    assert (str(found) if found is not None else None) == expected


@pytest.mark.parametrize("version", ["2.5.0a0", "2.5.0.dev0", "2.5.0a0+e000cf0ad9", "2.5.0"])
def test_a_pre_release_of_a_boundary_is_on_its_release_side(version):
    """NGC's pre-releases are built from the release branch: 2.5.0a0 has the 2.5 code."""
    versions = {"torch_tensorrt": version}.get
    assert not when_holds({"torch_tensorrt": "<2.5"}, versions)
    assert when_holds({"torch_tensorrt": ">=2.5"}, versions)
    assert when_holds({"torch_tensorrt": ">=2.5.0,<2.6"}, versions)
    assert not when_holds({"torch_tensorrt": "<2.5.0a0"}, versions)  # a bound is read the same way


def test_pre_releases_still_sort_before_their_release():
    assert normalize_version("2.5.0a0") < normalize_version("2.5.0")


def test_a_rule_on_an_unknown_or_bad_version_does_not_apply():
    versions = {"torch_tensorrt": "2.5.0a0"}.get
    assert not when_holds({"torch": "<2.5"}, versions)  # an unknown version: the rule does not apply
    assert not when_holds({"torch_tensorrt": "not a spec"}, versions)


def test_first_rule_is_the_first_that_holds():
    rules = [{"when": {"torch": ">=2.9"}, "status": "pass"}, {"when": {"torch": ">=2.0"}, "status": "fail"},
             {"when": {}, "status": "pass"}]
    assert first_rule(rules, {"torch": "2.4.1"}.get)["status"] == "fail"
    assert first_rule(rules, {}.get) == {"when": {}, "status": "pass"}
    assert first_rule(rules[:2], {}.get) is None


@pytest.mark.parametrize("rules, package", [
    ([{"when": {"torchvision": "<0.26"}, "status": "fail"}], "torchvision"),
    ([{"when": {"ngc": ">=24.09"}, "status": "pass"},
      {"when": {"torch_tensorrt": "<2.5"}, "status": "fail"}], "torch_tensorrt"),
    ([{"when": {"torch": "<2.14", "python": ">=3.9"}, "status": "fail"}], "torch"),
    ([{"when": {"torch": "<2.3"}, "status": "pass"},  # a torch-tensorrt bug met from torch 2.3
      {"when": {"torch_tensorrt": "<2.5"}, "status": "fail"}], "torch_tensorrt"),
    ([{"when": {}, "status": "fail"}], "torch"), ([], "torch"),
])
def test_the_package_a_bug_is_about(rules, package):
    assert key_package(rules) == package
