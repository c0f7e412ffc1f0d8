"""check answers a bug of the ONNX path by the onnxscript release (the published records of
torch 2.9.1 with onnxscript 0.5.6, 0.5.7, 0.7.0 and 0.7.1, through the shipped snapshot)."""

from __future__ import annotations

import pytest

from repromatrix.check.command import check_answer
from repromatrix.check.environment import from_pins
from repromatrix.check.fixes import bug_fixes, fix_words
from repromatrix.check.osv import advisory
from repromatrix.check.records import snapshot_rows
from repromatrix.cli import main
from repromatrix.cli.check import catalog
from repromatrix.config.compat import load_table
from repromatrix.errors import UsageError

BN, GRU = "onnx_fuse_batchnorm_bias_collision", "onnx_gru_linear_before_reset"


def answer(*pins: str) -> dict[str, dict]:
    result = check_answer(catalog(), snapshot_rows()[0], {}, from_pins(pins), load_table())
    return {b["id"]: b for b in result["bugs"]}


def test_onnxscript_0_5_3_with_torch_2_9_1_is_answered_by_the_onnxscript_release():
    """The issue's example: a record of this onnxscript on torch 2.9.1 (a bisect probe) says the BatchNorm
    bug is not there (the fusion does not fire on a torch export before 0.5.5); the GRU bug
    came with 0.5.7, and no rule or record speaks of 0.5.3 for it."""
    bugs = answer("onnxscript==0.5.3", "torch==2.9.1")
    bn = bugs[BN]
    assert bn["verdict"] == "not affected" and bn["basis"] == "same onnxscript release"
    assert bn["record"]["versions"]["onnxscript"] == "0.5.3"
    assert bugs[GRU]["verdict"] == "cannot tell"


def test_an_affected_onnxscript_is_told_the_onnxscript_fix():
    bn = answer("onnxscript==0.5.6", "torch==2.9.1")[BN]
    assert bn["verdict"] == "affected" and bn["fixed_in"] == "onnxscript 0.5.7"
    gru = answer("onnxscript==0.6.2", "torch==2.9.1")[GRU]  # no record: its rules say so
    assert gru["verdict"] == "affected" and gru["inference"] and gru["fixed_in"] == "onnxscript 0.7.1"


def test_the_same_torch_is_not_the_same_onnxscript():
    """torch 2.9.1 was recorded with four onnxscript releases: each answers for its own."""
    assert answer("onnxscript==0.5.6", "torch==2.9.1")[BN]["record"]["versions"]["onnxscript"] == "0.5.6"
    assert answer("onnxscript==0.5.4", "torch==2.9.1")[BN]["verdict"] == "not affected"
    assert answer("onnxscript==0.5.7", "torch==2.9.1")[BN]["verdict"] == "not affected"
    gru = answer("onnxscript==0.7.0", "torch==2.9.1")[GRU]
    assert gru["verdict"] == "affected" and gru["basis"] == "same onnxscript release"
    assert gru["fixed_in"] == "onnxscript 0.7.1"
    assert answer("onnxscript==0.7.1", "torch==2.9.1")[GRU]["verdict"] == "not affected"
    # without onnxscript given, its bugs cannot tell (a torch record is not an onnxscript one)
    assert answer("torch==2.9.1")[GRU]["verdict"] == "cannot tell"


def test_the_fix_names_the_onnxscript_release_and_osv_the_pypi_package():
    fixes = bug_fixes(catalog(), snapshot_rows()[0], load_table())
    assert fixes[BN]["package"] == "onnxscript" and fixes[BN]["fixed_in"] == "0.5.7"
    assert fix_words(fixes[BN]).startswith("fixed in onnxscript 0.5.7")
    assert fixes[GRU]["fixed_in"] == "0.7.1"
    known = load_table().onnx["onnxscript"]
    osv = advisory(GRU, catalog()[GRU], fixes[GRU], snapshot_rows()[0], known, "2026-11-28T00:00:00Z")
    assert [a["package"] for a in osv["affected"]] == [{"ecosystem": "PyPI", "name": "onnxscript"}]


def test_an_unknown_onnxscript_release_is_bad_input():
    with pytest.raises(UsageError, match=r"onnxscript==0.5.5: not a onnxscript release"):
        from_pins(["onnxscript==0.5.5", "torch==2.9.1"])


def test_the_command_prints_the_onnxscript_fix(capsys):
    main(["check", "onnxscript==0.5.6", "torch==2.9.1", "--format", "json"])
    import json

    bugs = {b["id"]: b for b in json.loads(capsys.readouterr().out)["bugs"]}
    assert bugs[BN]["fixed_in"] == "onnxscript 0.5.7"


def upgrade(*pins: str) -> dict:
    return check_answer(catalog(), snapshot_rows()[0], {}, from_pins(pins), load_table())["upgrade"]


def test_the_upgrade_moves_onnxscript_where_its_bugs_are_fixed():
    """onnxscript 0.5.6 has the BatchNorm and unbind bugs (fixed in 0.5.7); the GRU bug came
    with 0.5.7 and went with 0.7.1: the smallest upgrade that avoids both and brings nothing
    is onnxscript 0.7.1, and torch stays where it is clear."""
    up = upgrade("onnxscript==0.5.6", "torch==2.14.1")
    assert up["found"] and up["changes"] == ["onnxscript"]
    assert up["versions"]["onnxscript"] == "0.7.1" and up["versions"]["torch"] == "2.14.1"
    assert {BN, "onnx_unbind_size_one"} <= set(up["avoids"]) and GRU not in up["brings"]
    assert up["install"] == "pip install torch==2.14.1 onnxscript==0.7.1"
    # with torch's own bugs too, both move together in one command
    both = upgrade("onnxscript==0.5.6", "torch==2.9.1")
    assert {"torch", "onnxscript"} <= set(both["changes"]) and BN in both["avoids"]
    assert "onnxscript==0.7.1" in both["install"] and "torch==2.14.0" in both["install"]


def test_an_onnx_package_no_bug_is_about_stays_and_an_unmoved_one_is_not_pinned():
    from repromatrix.check.candidates import candidates

    env = from_pins(["torch==2.14.1", "onnxscript==0.7.1", "onnxruntime==1.20.0"])
    found = candidates(load_table(), env, moving={"onnxscript"})
    assert found and all(c["versions"].get("onnxruntime") is None for c in found)
    newer = [c for c in found if c["versions"].get("onnxscript") == "0.7.2"]
    assert newer and all("onnxscript==0.7.2" in c["install"] for c in newer)
    stays = [c for c in found if c["versions"].get("onnxscript") == "0.7.1"]
    assert stays and all("onnxscript" not in c["install"] for c in stays)
