"""Stage 2: expand stacks x repros into cells, select, and group by image. Pure.

Selection mirrors pytest/nox `-k`: words joined by `and`, `or`, `not` and
parentheses. A word matches a cell when it is a case-insensitive substring of
one of the cell's keywords (cell id, stack id, repro id, stack kind, tags), or,
if it holds `*`, `?` or `[`, when it glob-matches one of them. Without `-k`,
the stacks tagged `default` are selected; `all_stacks` selects everything.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Callable, Sequence

from repromatrix.errors import UsageError
from repromatrix.model import Cell, Plan, Stack, StackGroup

DEFAULT_TAG = "default"
_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")

Predicate = Callable[[frozenset[str]], bool]


def expand(stacks: Sequence[Stack]) -> tuple[Cell, ...]:
    """Every (stack, repro) pair, in matrix order."""
    return tuple(Cell(s, r) for s in stacks for r in s.repros)


def keywords(cell: Cell) -> frozenset[str]:
    s = cell.stack
    return frozenset(k.lower() for k in (cell.id, s.id, cell.repro, s.kind, *s.tags))


def select(cells: Sequence[Cell], expr: str | None = None, *, all_stacks: bool = False) -> tuple[Cell, ...]:
    """Cells matching `expr`; without one, the default selection (or all)."""
    if expr:
        pred = compile_expr(expr)
        return tuple(c for c in cells if pred(keywords(c)))
    if all_stacks:
        return tuple(cells)
    return tuple(c for c in cells if DEFAULT_TAG in c.stack.tags)


def group(cells: Sequence[Cell]) -> Plan:
    """Cells grouped by stack (one image, one container), first-seen order kept."""
    order: dict[str, tuple[Stack, list[str]]] = {}
    for c in cells:
        order.setdefault(c.stack.id, (c.stack, []))[1].append(c.repro)
    return Plan(tuple(StackGroup(s, tuple(rs)) for s, rs in order.values()))


def make_plan(stacks: Sequence[Stack], expr: str | None = None, *, all_stacks: bool = False,
              listing: Sequence[str] = ("repromatrix", "plan", "--all")) -> Plan:
    """expand -> select -> group; an empty selection is a UsageError whose hint runs
    ``listing`` (the command that lists every cell of this matrix)."""
    cells = select(expand(stacks), expr, all_stacks=all_stacks)
    if not cells:
        what = f"-k {expr!r}" if expr else f"the default selection (stacks tagged {DEFAULT_TAG!r})"
        raise UsageError(f"{what} selects no cells; `{shlex.join(listing)}` lists them all")
    return group(cells)


def compile_expr(expr: str) -> Predicate:
    """Parse a -k expression into a predicate over a cell's keywords."""
    tokens = _TOKEN.findall(expr)
    if not tokens:
        raise UsageError(f"-k {expr!r}: empty expression")
    parser = _Parser(tokens, expr)
    pred = parser.parse_or()
    if parser.pos != len(tokens):
        raise UsageError(f"-k {expr!r}: unexpected {tokens[parser.pos]!r}")
    return pred


class _Parser:
    def __init__(self, tokens: list[str], expr: str) -> None:
        self.tokens, self.expr, self.pos = tokens, expr, 0

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self) -> str:
        tok = self._peek()
        if tok is None:
            raise UsageError(f"-k {self.expr!r}: expression ends too early")
        self.pos += 1
        return tok

    def parse_or(self) -> Predicate:
        left = self.parse_and()
        while self._peek() == "or":
            self.pos += 1
            right, prev = self.parse_and(), left
            left = lambda kw, a=prev, b=right: a(kw) or b(kw)  # noqa: E731
        return left

    def parse_and(self) -> Predicate:
        left = self.parse_not()
        while self._peek() == "and":
            self.pos += 1
            right, prev = self.parse_not(), left
            left = lambda kw, a=prev, b=right: a(kw) and b(kw)  # noqa: E731
        return left

    def parse_not(self) -> Predicate:
        if self._peek() == "not":
            self.pos += 1
            inner = self.parse_not()
            return lambda kw: not inner(kw)
        return self.parse_atom()

    def parse_atom(self) -> Predicate:
        tok = self._take()
        if tok == "(":
            inner = self.parse_or()
            if self._take() != ")":
                raise UsageError(f"-k {self.expr!r}: missing ')'")
            return inner
        if tok in (")", "and", "or", "not"):
            raise UsageError(f"-k {self.expr!r}: unexpected {tok!r}")
        return _word(tok.lower())


def _word(word: str) -> Predicate:
    if any(ch in word for ch in "*?["):
        return lambda kw: any(fnmatch.fnmatchcase(k, word) for k in kw)
    return lambda kw: any(word in k for k in kw)
