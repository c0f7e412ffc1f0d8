"""The pre-commit hook (.pre-commit-hooks.yaml), through pre-commit itself, offline.

A project's git repository with a requirements.txt and a .pre-commit-config.yaml whose
`repo:` is a local git copy of this checkout (its working tree, committed); pre-commit
makes the hook's virtualenv and pip-installs repromatrix from that copy. Offline: no
index (PIP_NO_INDEX), the build backend (setuptools) from the wheels virtualenv ships
(PIP_FIND_LINKS), and repromatrix's dependencies from this interpreter's site-packages
(VIRTUALENV_SYSTEM_SITE_PACKAGES; and PYTHONPATH when the tests run in a venv, as nox's):
what pip installs is the copy's own package, and the hook imports it (asserted).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml
from support import ROOT

DEFORM = re.compile(r"^affected +deform_conv2d_device ", re.M)  # its line of check's table

pytestmark = pytest.mark.slow
AFFECTED = "torch==2.4.1\ntorchvision==0.19.1\ntorch-tensorrt==2.4.0\n"
GPU = "torch==2.5.1\ntorchvision==0.20.1\ntorch-tensorrt==2.5.0\n"  # deploy/requirements-gpu.txt
GIT = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT}, timeout=120).stdout.strip()


def hook_repo(folder: Path) -> tuple[Path, str]:
    """A git repository of this checkout's files (tracked and new, not ignored); its commit."""
    files = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "hook repository")
    return folder, git(folder, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment pre-commit runs in: its own cache, no index, no network."""
    pytest.importorskip("pre_commit", reason="pre-commit comes with the test extra")
    virtualenv = pytest.importorskip("virtualenv")
    embedded = Path(virtualenv.__file__).parent / "seed" / "wheels" / "embed"
    home = tmp_path_factory.mktemp("pre-commit-home")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if sys.prefix != sys.base_prefix:      # the tests run in a venv (nox): its packages too
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib",
                                                                                       "platlib")))
    return {**env, **GIT, "PRE_COMMIT_HOME": str(home), "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(embedded), "VIRTUALENV_SYSTEM_SITE_PACKAGES": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return hook_repo(tmp_path_factory.mktemp("hook-repo"))


def project(folder: Path, repo: tuple[Path, str], args: list[str] | None = None) -> Path:
    hook: dict = {"id": "repromatrix-check"}
    if args:
        hook["args"] = args
    config = {"repos": [{"repo": str(repo[0]), "rev": repo[1], "hooks": [hook]}]}
    (folder / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    (folder / "requirements.txt").write_text(AFFECTED)
    (folder / "deploy").mkdir()
    (folder / "deploy" / "requirements-gpu.txt").write_text(GPU)
    (folder / "notes.txt").write_text("not a requirements file\n")
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    return folder


def pre_commit(folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=600)


def test_the_hook_fails_on_a_known_bug_in_each_requirements_file(tmp_path, repo, offline) -> None:
    done = pre_commit(project(tmp_path, repo), offline)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "== requirements.txt" in out and "== deploy/requirements-gpu.txt" in out, out
    assert "notes.txt" not in out
    assert len(re.findall(DEFORM, out)) == 1  # torch-tensorrt 2.4.0 only
    pythons = list(Path(offline["PRE_COMMIT_HOME"]).glob("repo*/py_env-*/bin/python"))
    assert len(pythons) == 1
    where = subprocess.run([str(pythons[0]), "-c", "import repromatrix; print(repromatrix.__file__)"],
                           env=offline, capture_output=True, text=True, timeout=60).stdout
    assert where.startswith(str(pythons[0].parents[1])), f"the hook runs its own install: {where}"


def test_the_hook_passes_with_its_args_ignoring_what_affects_the_files(tmp_path, repo, offline) -> None:
    affected: set[str] = set()
    for text in (AFFECTED, GPU):  # what affects either file
        pins = tmp_path / "pins.txt"
        pins.write_text(text)
        answer = subprocess.run([sys.executable, "-m", "repromatrix.cli", "check", "-r", str(pins),
                                 "--format", "json"], capture_output=True, text=True,
                                env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=120)
        pins.unlink()
        affected |= set(json.loads(answer.stdout)["affected"])
    ignore = [a for bug in sorted(affected) for a in ("--ignore", bug)]
    done = pre_commit(project(tmp_path, repo, ignore), offline)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout
