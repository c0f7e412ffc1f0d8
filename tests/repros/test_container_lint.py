"""The container side is linted like the rest, for the Python it runs on (3.8 and later)."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def ruff() -> list[str]:
    exe = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(exe).exists():
        pytest.skip("ruff is not installed (pip install -e '.[lint]')")
    return [exe]


def test_the_lint_session_runs_over_repros() -> None:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    linted = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == "LINTED" for t in node.targets))
    assert "repros" in linted and "src" in linted and "tests" in linted
    lint = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "lint")
    assert "LINTED" in ast.unparse(lint)


# typing's spellings (3.8) and a 3.10 statement: what UP and the 3.8 target say of them
SAMPLE = ("from __future__ import annotations\n\nfrom typing import List, Optional\n\n\n"
          "def f(x: List[int]) -> Optional[int]:\n    match x:\n        case _:\n"
          "            return None\n")


def codes(as_path: str) -> set[str]:
    """What ruff reports of ``SAMPLE`` as if it were the file ``as_path``."""
    proc = subprocess.run([*ruff(), "check", "--no-cache", "--output-format", "json",
                           "--stdin-filename", as_path, "-"], cwd=ROOT, input=SAMPLE,
                          capture_output=True, text=True)
    return {d["code"] or "invalid-syntax" for d in json.loads(proc.stdout)}


@pytest.mark.parametrize("as_path", ["repros/harness/_new.py", "repros/new_bug.py",
                                     "src/repromatrix/onefile/_new.py"])
def test_the_container_side_is_linted_for_python38(as_path: str) -> None:
    found = codes(as_path)
    assert "invalid-syntax" in found, "a 3.10 statement is refused on the container side"
    assert not {"UP006", "UP007", "UP035", "UP045"} & found, "UP keeps the 3.8 spellings"


def test_the_host_side_is_linted_for_python310() -> None:
    found = codes("src/repromatrix/new.py")
    assert "invalid-syntax" not in found and {"UP006", "UP045"} <= found


def test_ruff_finds_nothing_in_repros() -> None:
    proc = subprocess.run([*ruff(), "check", "--output-format", "json", "repros"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, [f"{d['filename']}:{d['code']}" for d in json.loads(proc.stdout)]
