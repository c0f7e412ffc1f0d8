"""The tests mirror the packages: one folder per package of the harness, fixtures in
conftest.py files, shared helpers in tests/support/, and no test module importing another."""

from __future__ import annotations

import ast

from support import ROOT

TESTS = ROOT / "tests"
PACKAGE = ROOT / "src" / "repromatrix"
# folders that are not a package of the harness: the project as a whole, the container side
OWN = {"project", "repros", "support", "data"}


def test_each_test_folder_is_a_package_of_the_harness_or_says_what_it_holds() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert folders - packages - OWN == set()
    top = {p.stem.removeprefix("test_") for p in TESTS.glob("test_*.py")}
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert top <= modules, f"tests at the top must test a top-level module: {sorted(top - modules)}"


def test_no_test_module_imports_another() -> None:
    offenders = []
    for path in TESTS.rglob("*.py"):
        if "data" in path.relative_to(TESTS).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names
                          if n.split(".")[-1].startswith(("test_", "conftest"))]
    assert not offenders
