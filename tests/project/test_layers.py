"""The package's floors: each stage imports only its own floor and the floors below.

The tree reads as the flow (ARCHITECTURE.md): config -> plan -> engines -> run ->
store -> report, with cli on top. An import up a floor, or a circle between
modules, is a design error this test names.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "repromatrix"

# lowest first; a module may import its own floor and any floor below it
FLOORS: list[set[str]] = [
    {"__init__", "textsafe", "errors", "envvars", "model", "paths", "lock", "rules"},
    {"config"},
    {"plan", "releases", "store"},
    {"engines", "onefile", "distribute"},
    {"run"},
    {"report", "bisect", "check"},
    {"cli", "__main__"},
]
TOP_LEVEL_LIMIT = 10


def _part(module: str) -> str:
    """The first part below the package: ``repromatrix.run.cells`` -> ``run``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _floor(part: str) -> int:
    for n, names in enumerate(FLOORS):
        if part in names:
            return n
    raise AssertionError(f"repromatrix.{part} has no floor in tests/project/test_layers.py")


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every repromatrix module ``name`` imports, at any depth (lazy imports count)."""
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m in modules and m != name}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_top_level_stays_small() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= TOP_LEVEL_LIMIT, f"{len(top)} modules at the top: {top}"


def test_every_folder_and_top_level_module_has_a_floor() -> None:
    for child in PACKAGE.iterdir():
        if child.is_dir() and (child / "__init__.py").exists():
            _floor(child.name)
        elif child.suffix == ".py":
            _floor(child.stem)


def test_no_import_goes_up_a_floor(graph: dict[str, set[str]]) -> None:
    up = [f"{a} -> {b}" for a, targets in graph.items() for b in sorted(targets)
          if _floor(_part(b)) > _floor(_part(a))]
    assert not up, "imports up a floor:\n" + "\n".join(up)


def test_no_import_circle(graph: dict[str, set[str]]) -> None:
    edges = graph  # a package's __init__ and its own modules too: such a circle fails at import
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (circle := visit(node)):
            pytest.fail("import circle: " + " -> ".join(circle))
