"""Released the way nox and cibuildwheel release: one version number, written once; a
changelog that names it; a tag-driven workflow that builds, checks, proves the wheel's
version and publishes by trusted publishing.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import yaml

import repromatrix

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / ".github" / "workflows" / "release.yml"


def pyproject_table(name: str) -> str:
    """The body of one ``[name]`` table of pyproject.toml (tomllib is 3.11+; the tests run on 3.10)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    return re.search(rf"^\[{re.escape(name)}\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S).group(1)


def test_the_version_is_written_in_exactly_one_place():
    """`__version__` in the package; pyproject reads it (dynamic), nothing else says it."""
    project = pyproject_table("project")
    assert not re.search(r"^version\s*=", project, re.M)
    assert re.search(r'^dynamic\s*=\s*\[[^]]*"version"', project, re.M)
    assert re.search(r'^version\s*=\s*\{\s*attr\s*=\s*"repromatrix.__version__"\s*\}',
                     pyproject_table("tool.setuptools.dynamic"), re.M)
    value = re.compile(rf"[\"']{re.escape(repromatrix.__version__)}[\"']")
    written = [p.relative_to(ROOT).as_posix()
               for p in [ROOT / "pyproject.toml", ROOT / "noxfile.py", *(ROOT / "src").rglob("*.py"),
                         *(ROOT / ".github" / "workflows").glob("*.yml")]
               if value.search(p.read_text(encoding="utf-8"))
               or re.search(r"^__version__\s*=", p.read_text(encoding="utf-8"), re.M)]
    assert written == ["src/repromatrix/__init__.py"], written
    # setuptools reads the attribute without importing the package: a plain literal
    tree = ast.parse((ROOT / "src" / "repromatrix" / "__init__.py").read_text(encoding="utf-8"))
    literal = next(n.value.value for n in tree.body if isinstance(n, ast.Assign)
                   and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["__version__"])
    assert literal == repromatrix.__version__ == "0.1.0"  # records and cache keys depend on it


def test_the_installed_metadata_and_the_cli_say_the_packages_version():
    """An editable install's metadata (built from pyproject) and `repromatrix --version` agree
    with `__version__`, and records and cache keys use the same value."""
    from repromatrix.store.record import Result

    assert importlib.metadata.version("repromatrix") == repromatrix.__version__
    proc = subprocess.run([sys.executable, "-m", "repromatrix", "--version"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert proc.stdout.strip() == f"repromatrix {repromatrix.__version__}", proc.stderr
    assert Result.from_dict({"schema_version": 3, "run_id": "r", "cell": "s--x", "stack": {"id": "s"},
                             "repro": "x", "status": "pass"}).harness_version == repromatrix.__version__


def test_the_changelog_names_the_current_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert headings[0] == "Unreleased", "Keep a Changelog: Unreleased first"
    assert repromatrix.__version__ in headings, f"CHANGELOG.md has no entry for {repromatrix.__version__}"
    assert re.search(rf"^## \[{re.escape(repromatrix.__version__)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.M)


def test_release_workflow_shape():
    wf = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads the key `on` as True
    assert on["push"]["tags"] == ["v*"] and "workflow_dispatch" in on
    build, publish = wf["jobs"]["build"], wf["jobs"]["publish"]
    scripts = "\n".join(s.get("run", "") for s in build["steps"])
    assert "python -m build" in scripts and "twine check --strict" in scripts
    assert '/bin/repromatrix" --version' in scripts and '"repromatrix $want"' in scripts
    assert 'want="${REF_NAME#v}"' in scripts and "python -m venv" in scripts
    assert publish["needs"] == "build" and "refs/tags/v" in publish["if"]
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    assert any(s.get("uses", "").startswith("pypa/gh-action-pypi-publish@") for s in publish["steps"])
    assert wf["permissions"] == {"contents": "read"}  # nothing else may write


def test_actionlint_passes_on_the_release_workflow():
    from support.tools import actionlint

    proc = subprocess.run([actionlint(), "-no-color", str(RELEASE)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
