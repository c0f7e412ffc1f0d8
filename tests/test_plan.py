"""Plan: expansion, -k selection, globs, default selection, grouping."""

from __future__ import annotations

import pytest

from repromatrix.errors import UsageError
from repromatrix.model import Stack
from repromatrix.plan import compile_expr, expand, group, make_plan, select

STACKS = (
    Stack(id="pip-torch2.4.1-trt2.4.0-cu124-py3.11", kind="pip", torch="2.4.1",
          repros=("deform", "onnx"), tags=("default",)),
    Stack(id="pip-torch2.5.1-trt2.5.0-cu124-py3.11", kind="pip", torch="2.5.1", repros=("deform", "onnx")),
    Stack(id="ngc-23.12", kind="ngc", ngc="23.12", repros=("deform",), tags=("default", "reported")),
)


def ids(cells):
    return [c.id for c in cells]


def test_expand_is_the_product_in_matrix_order():
    assert ids(expand(STACKS)) == [
        "pip-torch2.4.1-trt2.4.0-cu124-py3.11--deform", "pip-torch2.4.1-trt2.4.0-cu124-py3.11--onnx",
        "pip-torch2.5.1-trt2.5.0-cu124-py3.11--deform", "pip-torch2.5.1-trt2.5.0-cu124-py3.11--onnx",
        "ngc-23.12--deform"]


def test_default_selection_is_the_default_tag_and_all_is_everything():
    cells = expand(STACKS)
    assert {c.stack.id for c in select(cells)} == {STACKS[0].id, "ngc-23.12"}
    assert len(select(cells, all_stacks=True)) == 5


@pytest.mark.parametrize("expr, expected", [
    ("deform", 3),
    ("deform and not ngc", 2),
    ("ngc or onnx", 3),
    ("(torch2.5 or ngc) and deform", 2),
    ("pip-*--onnx", 2),
    ("ngc-23.12--deform", 1),
    ("reported", 1),
    ("DEFORM", 3),
    ("nothing-like-this", 0),
])
def test_k_expressions(expr, expected):
    assert len(select(expand(STACKS), expr)) == expected


@pytest.mark.parametrize("expr", ["deform and", "(deform", "and", "deform )", "not"])
def test_malformed_expressions_are_usage_errors(expr):
    with pytest.raises(UsageError, match="-k"):
        compile_expr(expr)


def test_group_keeps_one_group_per_stack():
    plan = group(select(expand(STACKS), "deform or onnx"))
    assert [g.stack.id for g in plan.groups] == [s.id for s in STACKS]
    assert plan.groups[0].repros == ("deform", "onnx")
    assert ids(plan.cells) == ids(expand(STACKS))


def test_empty_selection_is_refused_with_a_hint():
    with pytest.raises(UsageError, match="selects no cells"):
        make_plan(STACKS, "nothing-like-this")


def test_cell_ids_are_filesystem_safe():
    import re
    for cell in expand(STACKS):
        assert re.fullmatch(r"[A-Za-z0-9._+-]+", cell.id)
