"""check's short answers (check.table): one line per bug, affected first, pip-audit's columns;
Markdown that GitHub renders as a table, hostile record text kept in its cell."""

from __future__ import annotations

import re

from repromatrix.check.table import HEADER, columns, markdown, rows


def bug(bug_id: str, verdict: str, **more) -> dict:
    return {"id": bug_id, "title": f"{bug_id} title", "kind": "bug", "verdict": verdict, "ignored": False,
            "workaround": "", "fixed_in": None, "upstream": [], **more}


def result(*bugs: dict, upgrade: dict | None = None) -> dict:
    return {"environment": {"label": "torch==2.4.1 torch-tensorrt==2.4.0", "notes": [],
                            "versions": {"torch": "2.4.1", "torchvision": None,
                                         "torch_tensorrt": "2.4.0", "ngc": None}},
            "source": {"kind": "store", "where": "results", "cells": 3},
            "bugs": list(bugs), "upgrade": upgrade, "exit": 1}


PACKAGES = {"a": "torch_tensorrt", "b": "torch", "c": "torchvision"}
HOSTILE = bug("a", "affected", workaround="Workaround: use x | y <b>bold</b>\x1b[31m.",
              fixed_in="torch-tensorrt 2.5.0", upstream=["https://github.com/o/r/issues/1"])
ANSWER = result(bug("z", "not affected"), bug("b", "cannot tell"), HOSTILE,
                bug("c", "affected", ignored=True),
                upgrade={"found": True, "changes": ["torch", "torch_tensorrt"], "avoids": ["a"],
                         "still_affected": [], "brings": [],
                         "versions": {"torch": "2.5.0", "torch_tensorrt": "2.5.0"},
                         "install": "pip install torch==2.5.0 torch-tensorrt==2.5.0"})


def test_affected_first_then_cannot_tell_ignored_and_not_affected_left_out():
    found = rows(ANSWER, PACKAGES)
    assert [(r.verdict, r.bug) for r in found] == [("affected", "a"), ("cannot tell", "b")]
    first = found[0]
    assert (first.package, first.installed, first.fixed_in, first.link) == \
        ("torch-tensorrt", "2.4.0", "2.5.0", "https://github.com/o/r/issues/1")
    assert first.workaround.startswith("use x | y") and "\x1b" not in first.workaround
    assert (found[1].fixed_in, found[1].workaround, found[1].link) == ("-", "-", "-")
    assert rows(result(bug("a", "affected")), PACKAGES)[0].fixed_in == "no fix yet"
    every = rows(ANSWER, PACKAGES, ("affected", "cannot tell", "not affected"))
    assert [r.bug for r in every] == ["a", "b", "z"]


def test_columns_line_up_under_their_header_and_end_with_upgrade_and_counts():
    text = columns(ANSWER, PACKAGES, 1)
    lines = text.splitlines()
    head = next(n for n, line in enumerate(lines) if line.startswith("verdict"))
    starts = [lines[head].index(h) for h in HEADER]
    assert set(lines[head + 1]) == {"-", " "}
    for line in lines[head + 2:head + 4]:
        assert [line[s - 2:s] for s in starts[1:]] == ["  "] * (len(HEADER) - 1)
    assert "\x1b" not in text and "\\x1b" in text
    assert "smallest upgrade: torch 2.4.1 -> 2.5.0, torch-tensorrt 2.4.0 -> 2.5.0 (avoids 1)" in text
    assert "  pip install torch==2.5.0 torch-tensorrt==2.5.0" in lines
    assert lines[-1] == ("1 of 4 known bug(s) affect this environment (1 ignored); 1 cannot tell, "
                         "1 not affected (not listed: --verbose lists every bug with its evidence); "
                         "exit 1")


def table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def test_markdown_is_a_github_table_with_escaped_cells():
    text = markdown(ANSWER, PACKAGES, 1)
    header, rule, *body = table_lines(text)
    assert header == "| " + " | ".join(HEADER) + " |"
    assert rule == "|" + " --- |" * len(HEADER)
    assert len(body) == 2
    for line in (header, rule, *body):  # as many cells as columns: every | in a cell escaped
        assert len(re.split(r"(?<!\\)\|", line)) == len(HEADER) + 2
    assert "use x \\| y &lt;b&gt;bold&lt;/b&gt;" in body[0] and "\x1b" not in text
    assert "```sh\npip install torch==2.5.0 torch-tensorrt==2.5.0\n```" in text
    assert "**1 affected**, 1 cannot tell, 1 not affected, 1 ignored (of 4 known bugs); exit 1" in text
    assert len(table_lines(markdown(ANSWER, PACKAGES, 1, every=True))) == 5


def test_nothing_to_list_is_no_table():
    clean = result(bug("z", "not affected"))
    assert not table_lines(markdown(clean, PACKAGES, 0))
    assert "verdict" not in columns(clean, PACKAGES, 0)


def test_what_run_found_is_said_in_both():
    ran = {**ANSWER, "run": {"ran": 4, "disagree": ["a"]}}
    said = "run now: 4 repro(s) run; disagreeing with the records: a"
    assert said in columns(ran, PACKAGES, 1).splitlines()
    assert f"{said}." in markdown(ran, PACKAGES, 1)
    assert "run now" not in columns(ANSWER, PACKAGES, 1)


def test_each_line_says_the_bug_s_kind_in_words():
    answer = result(bug("a", "affected", kind="breaking-change"),
                    bug("b", "cannot tell", kind="silent-wrong-output"))
    assert [r.kind for r in rows(answer, PACKAGES)] == ["breaking change", "silent wrong output"]
    header, _, first, second = table_lines(markdown(answer, PACKAGES, 1))
    assert header.split(" | ")[2] == "kind"
    assert first.split(" | ")[2] == "breaking change" and second.split(" | ")[2] == "silent wrong output"
    assert "breaking change" in columns(answer, PACKAGES, 1)
