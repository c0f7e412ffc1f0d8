"""repros/harness/protocol.py: versions, signatures, requirements, status derivation (no torch needed)."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

REPROS = Path(__file__).resolve().parents[2] / "repros"
sys.path.insert(0, str(REPROS / "harness"))

import protocol  # noqa: E402
from protocol import Signature  # noqa: E402


@pytest.mark.parametrize(("version", "spec", "ok"), [
    ("2.4.1+cu121", ">=2.4,<2.5", True),
    ("2.5.0", ">=2.4,<2.5", False),
    ("2.4.0a0+07cecf4168", ">=2.4", False),  # PEP 440: an NGC pre-release is not the release
    ("2.4.0a0+07cecf4168", "<2.4", True),
    ("2.4.0a0+07cecf4168", "==2.4.*", True),
    ("2.5.0.dev0", ">=2.4,<2.5", True),
    ("2.5.0.dev0", "<2.5.0a0", True),      # dev before pre
    ("2.5.0rc1", ">2.5.0b2", True),
    ("2.5.0.post1", ">2.5.0", True),
    ("2.5.0.post1.dev0", "<2.5.0.post1", True),
    ("2.4.1+cu121", "==2.4.1+cu124", False),
    ("10.3.0.nv24.05", ">=10.3,<10.4", True),  # not PEP 440: its numeric release
    ("2.13.0", "<2.13", False),
    ("2.12.1", "<2.13", True),
    ("0.29.1+cu130", "==0.29.*", True),
    ("0.28.0", "==0.29.*", False),
    ("2.6.1", "~=2.6.0", True),
    ("2.7.0", "~=2.6.0", False),
    (None, ">=1", False),
    ("1.0", "", True),
])
def test_version_matches(version, spec, ok):
    assert protocol.version_matches(version, spec) is ok


def test_pre_release_is_not_the_release():
    assert not protocol.when_matches({"torch_tensorrt": ">=2.5"}, {"torch_tensorrt": "2.5.0a0"})
    assert protocol.when_matches({"torch_tensorrt": "<2.5"}, {"torch_tensorrt": "2.5.0a0"})


def test_order_agrees_with_packaging():
    """The stdlib ordering the repros use sorts as packaging does (local parts aside)."""
    from _versions import sort_key
    from packaging.version import Version

    texts = ["2.5.0.dev0", "2.5.0a0", "2.5.0a1.dev2", "2.5.0b2", "2.5.0rc1", "2.5", "2.5.0",
             "2.5.0.post1.dev3", "2.5.0.post1", "2.5.0-2", "2.5.1", "2.10.0", "1!0.1", "2.4.9"]
    assert sorted(texts, key=sort_key) == sorted(texts, key=Version)
    assert sort_key("2.5") == sort_key("2.5.0.0")


def test_bad_specifier_is_rejected():
    with pytest.raises(ValueError):
        protocol.version_matches("1.0", "=>1")


def _raise_chain():
    try:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                           "devices, cpu and cuda:0!")
    except RuntimeError as inner:
        try:
            raise ValueError("Failed to export \x1b[96mThis is step 1/3\x1b[0m") from inner
        except ValueError as outer:
            return outer


def test_signature_matches_through_the_chain_and_strips_ansi():
    exc = _raise_chain()
    sig = Signature("x", exc="RuntimeError", pattern=[r"This is step 1/3", r"cpu and cuda:\d"])
    assert sig.matches_exception(exc, versions={})
    assert "\x1b" not in protocol.exception_text(exc)


def test_signature_respects_stage_type_and_version_range():
    exc = _raise_chain()
    sig = Signature("x", exc="RuntimeError", pattern="cpu and cuda", stage="export",
                    when={"torch": ">=2.13"})
    assert sig.matches_exception(exc, "export", {"torch": "2.14.1"})
    assert not sig.matches_exception(exc, "compile", {"torch": "2.14.1"})
    assert not sig.matches_exception(exc, "export", {"torch": "2.12.0"})
    assert not Signature("y", exc="KeyError", pattern="cpu").matches_exception(exc, "export", {})


def test_signature_type_matches_base_classes_by_name():
    class FakeTensorDeviceMismatchError(RuntimeError):
        pass

    exc = FakeTensorDeviceMismatchError("found at least two devices, cuda:0 and cpu!")
    assert Signature("a", exc="RuntimeError", pattern="cuda:0 and cpu").matches_exception(exc, None, {})
    assert Signature("b", exc="FakeTensorDeviceMismatchError", pattern="cpu").matches_exception(exc)


def test_signal_signature_needs_signal_and_text():
    sig = Signature("segv", signal="SIGSEGV", pattern="more than one -1 wildcard", stage="ts")
    out = "Error Code 4: Shape Error (reshape dimension with more than one -1 wildcard."
    assert sig.matches_signal("SIGSEGV", out, "ts", {})
    assert not sig.matches_signal("SIGABRT", out, "ts", {})
    assert not sig.matches_signal("SIGSEGV", "something else", "ts", {})
    assert not sig.matches_exception(RuntimeError(out), "ts", {})


def test_log_signature_needs_the_stage_output():
    sig = Signature("w", exc="RuntimeError", stage="ts", log=r"more than one -1 wildcard")
    exc = RuntimeError("conversion failed")
    assert sig.matches_exception(exc, "ts", {}, log="Error Code 4: ... more than one -1 wildcard.")
    assert not sig.matches_exception(exc, "ts", {}, log="")
    assert not sig.matches_exception(exc, "ts", {}, log="[Shuffle]: output shape can not be computed")


def test_log_signature_on_a_stage_that_is_not_isolated_is_refused(tmp_path):
    r = protocol.Repro("demo", [Signature("w", stage="ts", log="wildcard")], str(tmp_path / "r.json"))
    with pytest.raises(ValueError, match="isolate=True"):
        r.stage("ts", lambda s: None)
    r.stage("other", lambda s: None)  # the signature does not apply there


def test_isolated_stage_needs_a_module_level_function(tmp_path):
    r = protocol.Repro("demo", [], str(tmp_path / "r.json"))
    r.stage("lam", lambda s: None, isolate=True)
    st = r.stage_by_name("lam")
    assert st.status == "error" and "module-level function" in st.message


def test_signature_roundtrips_as_data():
    sig = Signature("s", exc=("A", "B"), pattern=["x", "y"], stage="st", signal=None,
                    when={"torch": "<2.13"}, note="n", log=["z"])
    again = Signature.from_dict(json.loads(json.dumps(sig.to_dict())))
    assert again.to_dict() == sig.to_dict()


def test_requirements():
    assert protocol.requirement_reason("json") is None
    assert "not installed" in protocol.requirement_reason("no_such_pkg_abc")
    assert "not installed" in protocol.requirement_reason("no_such_pkg_abc>=1.0")
    assert protocol.requirement_reason("python>=3.8") is None
    assert "needs python<3" in protocol.requirement_reason("python<3")


def _stage(name, status, role="main", numeric=False, sig=None):
    return {"name": name, "status": status, "role": role, "message": status, "signature": sig,
            "checks": [{"what": "w", "ok": True, "numeric": numeric}]}


@pytest.mark.parametrize(("stages", "expected"), [
    ([_stage("a", "pass", numeric=True)], "pass"),
    ([_stage("a", "pass")], "error"),  # ran but never checked: not a pass
    ([_stage("a", "pass", numeric=True), _stage("b", "skip")], "skip"),
    ([_stage("a", "error"), _stage("b", "fail", sig="s")], "fail"),
    ([_stage("a", "error"), _stage("b", "skip")], "error"),
    ([_stage("a", "fail", role="info", sig="s"), _stage("b", "skip")], "skip"),
    ([_stage("w", "pass", role="workaround", numeric=True)], "error"),  # no main stage
])
def test_derive_status(stages, expected):
    assert protocol.derive_status(stages)[0] == expected


def test_derive_status_names_the_signature_and_workaround_is_separate():
    stages = [_stage("compile", "fail", sig="gpu_id"),
              _stage("workaround", "pass", role="workaround", numeric=True)]
    status, sig, message = protocol.derive_status(stages)
    assert (status, sig) == ("fail", "gpu_id") and message.startswith("compile")
    assert protocol.workaround_status(stages) == "pass"
    assert protocol.workaround_status([_stage("a", "pass")]) is None


def test_repro_writes_result_file_atomically(tmp_path):
    path = tmp_path / "r.json"
    r = protocol.Repro("demo", [Signature("bug", exc="ValueError", pattern="bug 1")], str(path))
    assert json.loads(path.read_text())["complete"] is False
    r.stage("a", lambda s: (_ for _ in ()).throw(ValueError("bug 1")))
    r.stage("b", lambda s: s.skip("no GPU"))
    r.stage("c", lambda s: None, after=["a"])
    res = r.finish()
    on_disk = json.loads(path.read_text())
    assert on_disk == json.loads(json.dumps(res, default=str))
    assert on_disk["complete"] and on_disk["status"] == "fail" and on_disk["signature"] == "bug"
    assert [s["status"] for s in on_disk["stages"]] == ["fail", "skip", "skip"]
    assert "needs stage 'a'" in on_disk["stages"][2]["message"]
    assert "ValueError: bug 1" in on_disk["traceback"]


def test_main_records_an_exception_outside_stages(tmp_path):
    path = tmp_path / "r.json"

    def body(r):
        raise KeyError("oops")

    assert protocol.main({"id": "demo"}, [], body, ["--result", str(path)]) == 0
    res = json.loads(path.read_text())
    assert res["status"] == "error" and res["stages"][-1]["name"] == "harness"


def test_container_side_sources_parse_as_python38():
    for p in REPROS.rglob("*.py"):
        ast.parse(p.read_text(), filename=str(p), feature_version=(3, 8))
