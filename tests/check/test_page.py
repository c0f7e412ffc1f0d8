"""check.page: the combinations the page's box answers for, and its compact data rebuilt is
the command's own answer for each (the browser test asks the page itself)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

from support import ROOT

from repromatrix.check.command import check_answer
from repromatrix.check.page import (
    KEPT_SOURCES,
    answers,
    arguments,
    code_digest,
    combinations,
    environment,
    environments,
    environments_data,
    rebuilt,
    verdicts_data,
)
from repromatrix.check.records import rows_source, store_rows
from repromatrix.cli.check import catalog
from repromatrix.config.compat import load_table


def test_the_combinations_are_what_the_table_allows() -> None:
    table = load_table()
    found = combinations(table)
    assert len(found) == len(set(found))
    assert [c[3] for c in found if c[3]] == table.ngc_tags()
    pip = [c for c in found if not c[3]]
    assert {c[0] for c in pip} == set(table.torch_versions())
    for torch, vision, trt, _ in pip:
        assert vision == "" or vision in table.torch[torch].torchvision
        assert trt == "" or table.torch_tensorrt[trt].torch.contains(torch)
    assert ("2.4.1", "0.19.1", "2.4.0", "") in found and ("2.4.1", "", "", "") in found
    assert any(c[2] and table.torch_tensorrt[c[2]].broken for c in pip)  # broken ones too
    assert arguments(("2.4.1", "", "2.4.0", "")) == ["torch==2.4.1", "torch-tensorrt==2.4.0"]
    assert arguments(("", "", "", "24.07")) == ["--ngc", "24.07"]


def test_the_data_rebuilt_is_the_commands_answer(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "results" / "published" / "vm", tmp_path / "store" / "vm")
    rows, _ = store_rows(tmp_path / "store")
    source = rows_source("results.json", "results.json", rows)
    table = load_table()
    bugs = catalog()
    found = combinations(table)
    want = [check_answer(bugs, rows, source, environment(c), table) for c in found]
    envs = environments_data(table)
    data = verdicts_data(answers(bugs, rows, source, table))
    # as the page reads them: through JSON
    envs, data = json.loads(json.dumps(envs)), json.loads(json.dumps(data))
    assert [e[0] for e in envs["environments"]] == [list(c) for c in found]
    for n, combination in enumerate(found):
        assert rebuilt(envs, data, n) == want[n], " ".join(arguments(combination))
    assert len(data["bugs"]) < sum(len(a["bugs"]) for a in want) / 5  # interned


def test_the_box_says_each_bug_s_kind_as_the_command_does(tmp_path: Path) -> None:
    """A catalog with every kind: the box's answers carry each bug's kind, the command's own."""
    from repromatrix.model import KINDS

    shutil.copytree(ROOT / "results" / "published" / "vm", tmp_path / "store" / "vm")
    rows, _ = store_rows(tmp_path / "store")
    source = rows_source("results.json", "results.json", rows)
    table = load_table()
    kinds = list(KINDS)
    bugs = {bug_id: {**bug, "kind": kinds[n % len(kinds)]}
            for n, (bug_id, bug) in enumerate(sorted(catalog().items()))}
    found = [c for c in combinations(table) if c[0] in ("2.4.1", "2.9.1") or c[3] == "24.09"]
    envs = json.loads(json.dumps(environments_data(table)))
    data = json.loads(json.dumps(verdicts_data(answers(bugs, rows, source, table))))
    every = [list(c) for c in combinations(table)]
    for combination in found:
        at = every.index(list(combination))
        got = rebuilt(envs, data, at)
        assert got == check_answer(bugs, rows, source, environment(combination), table)
        assert {b["id"]: b["kind"] for b in got["bugs"]} == {k: v["kind"] for k, v in bugs.items()}


def test_the_environments_are_kept_between_processes_under_the_digest_of_their_code(
        tmp_path: Path) -> None:
    """``kept_in``: the packaged table's environments and upgrades are worked out once, kept in
    a file named by their code's digest, read back as they were made; a damaged file is made
    again. (Each copy of the table is what the next process parses: nothing made for it yet.)"""
    made = environments(load_table())
    assert environments(copy.copy(load_table()), tmp_path) == made
    [kept] = tmp_path.glob("environments-*.json")
    assert kept.name == f"environments-{code_digest(KEPT_SOURCES)}.json"
    found = json.loads(kept.read_bytes())
    found[0][1]["label"] = "read back"
    kept.write_text(json.dumps(found), encoding="utf-8")
    again = environments(copy.copy(load_table()), tmp_path)
    assert again[0][1]["label"] == "read back" and again[1:] == made[1:]
    assert isinstance(again[0][0], tuple)
    kept.write_text("{", encoding="utf-8")
    assert environments(copy.copy(load_table()), tmp_path) == made
    assert json.loads(kept.read_bytes()) == json.loads(json.dumps(made))
