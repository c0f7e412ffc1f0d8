"""Sharding for real: two repros of the CPU example split into shards, each run apart and
merged by `report`, give the same cells and statuses as one run of them all."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.scale import TWO_REPROS, cells_and_statuses, cli, local_cpu_matrix

from repromatrix.store.results import load_records

pytestmark = [pytest.mark.torch, pytest.mark.slow]
SHARDS = 3  # the example has two stacks: one shard is empty, and must merge as such


def test_shards_merged_equal_one_run(tmp_path: Path) -> None:
    matrix = str(local_cpu_matrix(tmp_path))
    sel = ["--matrix", matrix, "--all", *TWO_REPROS]
    cli("run", *sel, "--backend", "local", "--results", str(tmp_path / "one"))
    one = cells_and_statuses(tmp_path / "one")
    assert len(one) == 4

    plan = json.loads(cli("plan", *sel, "--shards", str(SHARDS), "--format", "json").stdout)
    folders = []
    for shard in plan["shards"]:
        folder = tmp_path / f"shard-{shard['index']}"
        out = cli("run", *sel, "--backend", "local", "--shard", shard["shard"],
                  "--results", str(folder)).stdout
        assert f"shard {shard['shard']} (assignment {plan['assignment']})" in out
        assert set(cells_and_statuses(folder)) == set(shard["cells"])
        folders.append(folder)
    assert [len(s["stacks"]) for s in plan["shards"]] == [1, 1, 0]

    site = tmp_path / "site"
    report = cli("report", "--results", *map(str, folders), "--out", str(site))
    assert "conflict" not in report.stderr
    assert cells_and_statuses(*folders) == one
    html = (site / "index.html").read_text()
    assert set(re.findall(r'data-cell="([^"]+)"', html)) == set(one)
    for rec in load_records(folders).records:  # each stack ran on its own interpreter
        assert rec.env["torch"].startswith(rec.stack_id.split("torch")[1].split("-")[0])
