"""The compatibility table and stack resolution: shorthand, derivation, refusals."""

from __future__ import annotations

import pytest

from repromatrix.config import compat
from repromatrix.config.compat import CompatError, resolve_pip


def test_shorthand_resolves_to_newest_patch_and_derives_pins():
    pins = resolve_pip({"torch": "2.5"}, "3.11")
    assert pins == {"torch": "2.5.1", "torchvision": "0.20.1", "torch_tensorrt": "2.5.0",
                    "tensorrt": "10.3.0", "index": "cu124", "cuda": "12.4", "python": "3.11"}


def test_every_torch_minor_from_2_2_to_2_14_has_a_full_stack():
    for minor in range(2, 15):
        pins = resolve_pip({"torch": f"2.{minor}"}, "3.11")
        assert pins["torchvision"] and pins["torch_tensorrt"], minor
        assert pins["torch"].startswith(f"2.{minor}.")


def test_explicit_none_leaves_packages_out():
    pins = resolve_pip({"torch": "2.13.0", "torchvision": "none", "torch_tensorrt": None,
                        "index": "cpu"}, "3.11")
    assert pins["torchvision"] is None and pins["torch_tensorrt"] is None
    assert pins["index"] == "cpu" and pins["cuda"] is None


def test_torch_2_14_1_accepts_both_torchvision_patches():
    assert resolve_pip({"torch": "2.14.1", "torchvision": "0.29.2"}, "3.11")["torchvision"] == "0.29.2"
    assert resolve_pip({"torch": "2.14.1"}, "3.11")["torchvision"] == "0.29.1"


@pytest.mark.parametrize("fields, key, text", [
    ({"torch": "2.5.1", "torch_tensorrt": "2.4.0"}, "torch_tensorrt", "2.4.0 needs torch"),
    ({"torch": "2.4.1", "index": "cu130"}, "index", "never published for cu130"),
    ({"torch": "2.4.1", "index": "cu999"}, "index", "not a wheel index"),
    ({"torch": "2.14.1", "python": "3.8"}, "python", "no wheels for Python 3.8"),
    ({"torch": "2.2.2", "python": "3.12"}, "python", "torch_tensorrt 2.2.0 has no wheels"),
    ({"torch": "2.4.9"}, "torch", "not a known release"),
    ({"torch": "2.5.1", "torchvision": "0.19.1"}, "torchvision", "does not install with torch 2.5.1"),
    ({"torch": "2.5.1", "torch_tensorrt": "2.5.0", "index": "cpu"}, "index", "needs a CUDA build"),
    ({"torch": "2.5.1", "python": "three"}, "python", "not a Python version"),
])
def test_impossible_combinations_are_refused(fields, key, text):
    with pytest.raises(CompatError) as info:
        resolve_pip(fields, "3.11")
    assert info.value.key == key
    assert text in str(info.value)


def test_unknown_release_suggests_a_close_one():
    with pytest.raises(CompatError, match='did you mean "2.4.1"'):
        resolve_pip({"torch": "2.4.11"}, "3.11")


def test_ngc_releases_are_ordered_and_known():
    table = compat.load_table()
    tags = table.ngc_tags()
    assert tags[0] == "23.12" and tags[-1] == "26.09"
    assert compat.resolve_ngc("23.12").torch.startswith("2.2.0a0")
    with pytest.raises(CompatError, match="25.07 is not a known NGC"):
        compat.resolve_ngc("25.07")


def test_table_pairs_are_consistent():
    table = compat.load_table()
    for v, trt in table.torch_tensorrt.items():
        assert any(trt.torch.contains(t) for t in table.torch), f"torch_tensorrt {v} matches no torch"
        assert trt.index in table.indexes
    for v, rel in table.torch.items():
        for index in rel.indexes:
            assert index in table.indexes, (v, index)


def test_torch_2_15_gets_torchvision_by_its_requirement_with_a_confidence():
    """No torchvision was released with torch 2.15; 0.29.2 declares torch>=2.14.0."""
    pins = resolve_pip({"torch": "2.15.0"}, "3.11")
    assert pins["torchvision"] == "0.29.2" and pins["torch_tensorrt"] is None
    note = compat.pairing_note("2.15.0", "0.29.2")
    assert "pairing confidence M" in note and "torch (>=2.14.0)" in note
    assert compat.pairing_note("2.14.1", "0.29.1") == ""     # released together: nothing to say
    assert compat.pairing_note("2.15.0", None) == ""


def test_a_bad_confidence_mark_names_the_row():
    from repromatrix.config.compat import parse_table
    from repromatrix.errors import ConfigError

    raw = {"torch": {"2.15.0": {"torchvision": ["0.29.2"], "python": ">=3.11", "pypi_cuda": "13.2",
                                "indexes": [], "src": "V", "torchvision_src": "maybe"}},
           "indexes": {"cu130": "13.0"}, "torch_tensorrt": {}, "ngc": {}}
    raw["torch_tensorrt"] = {"2.14.0": {"torch": ">=2.14", "tensorrt": "11", "python": ">=3.10",
                                        "index": "cu130", "src": "V"}}
    raw["ngc"] = {"26.09": {"torch": "2.14.0a0", "python": "3.12"}}
    with pytest.raises(ConfigError) as info:
        parse_table(raw, "compat.yaml")
    assert "torch.2.15.0.torchvision_src" in str(info.value) and "maybe" in str(info.value)
