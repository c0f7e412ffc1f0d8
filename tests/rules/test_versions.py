"""rules.versions: how versions compare, which rule applies, which package a bug is about."""

from __future__ import annotations

import pytest

from repromatrix.rules.versions import first_rule, key_package, normalize_version, when_holds


@pytest.mark.parametrize("text, expected", [
    ("2.4.0a0+07cecf4168", "2.4.0a0"), ("2.4.1+cu124", "2.4.1"), ("2.5.0.dev0", "2.5.0.dev0"),
    ("10.3.0.nv24.05", "10.3.0"), ("24.05", "24.5"), ("2.10.0", "2.10.0"),
])
def test_normalize_version(text, expected):
    assert str(normalize_version(text)) == expected


def test_normalize_version_junk():
    assert normalize_version("unknown") is None and normalize_version(None) is None


def test_a_pre_release_falls_before_its_release():
    versions = {"torch_tensorrt": "2.5.0a0"}.get
    assert when_holds({"torch_tensorrt": "<2.5"}, versions)
    assert not when_holds({"torch_tensorrt": ">=2.5"}, versions)
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
    ([{"when": {}, "status": "fail"}], "torch"), ([], "torch"),
])
def test_the_package_a_bug_is_about(rules, package):
    assert key_package(rules) == package
