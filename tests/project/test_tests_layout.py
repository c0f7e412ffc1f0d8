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


def test_each_module_keeps_to_one_worker_under_loadgroup() -> None:
    """The groups of tests/conftest.py take effect under the pytest installed: xdist reads
    them from the node ids it suffixes, which pytest 9.2 no longer lets it change
    (pytest-dev/pytest-xdist#1386), and then every module is silently spread over the workers."""
    import os
    import re
    import subprocess
    import sys

    modules = ["tests/rules/test_versions.py", "tests/repros/test_protocol.py"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
                           "--dist", "loadgroup", "-v", *modules], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    workers: dict[str, set[str]] = {}
    for worker, nodeid in re.findall(r"^\[(gw\d+)\] \[\s*\d+%\] \w+ (\S+)", proc.stdout, re.M):
        workers.setdefault(nodeid.split("::", 1)[0], set()).add(worker)
    assert set(workers) == set(modules), proc.stdout[-3000:]
    assert all(len(w) == 1 for w in workers.values()), workers
