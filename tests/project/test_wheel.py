"""repromatrix as a wheel: the README's "A matrix of your own" walked for real, from a
fresh virtual environment outside the checkout, in a folder of the user's.

The wheel must carry the harness (runner, protocol, helpers, repros), the page's
templates and static files, the Dockerfile templates and the compat table; nothing may
be read from this checkout once it is installed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = "### A matrix of your own"


def quick_start() -> list[str]:
    """The commands of the README's section, as written."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, f"README.md's {SECTION!r} has no sh block"
    return [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]


def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{shlex.join(cmd)} exited {proc.returncode}:\n" \
                                 f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The checkout's wheel, built once for this module's tests."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv builds the wheel here (the test extra installs it)")
    out_dir = tmp_path_factory.mktemp("wheel")
    out = run([uv, "build", "--wheel", "--out-dir", str(out_dir), str(ROOT)], ROOT, dict(os.environ))
    wheels = list(out_dir.glob("repromatrix-*.whl"))
    assert len(wheels) == 1, out
    return wheels[0]


def test_the_wheel_carries_every_module_and_resource(wheel):
    """Every harness file of the checkout is in the wheel (a new subpackage or resource
    that pyproject's lists miss fails here)."""
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = {f"repromatrix/{p.relative_to(ROOT / 'src' / 'repromatrix')}"
              for p in (ROOT / "src" / "repromatrix").rglob("*") if p.is_file() and _shipped(p)}
    for folder in ("repros", "images", "report"):
        wanted |= {f"repromatrix/resources/{folder}/{p.relative_to(ROOT / folder)}"
                   for p in (ROOT / folder).rglob("*") if p.is_file() and _shipped(p)}
    assert not wanted - names, f"missing from the wheel: {sorted(wanted - names)}"


def _shipped(p: Path) -> bool:
    return "__pycache__" not in p.parts and p.suffix != ".pyc"


@pytest.mark.slow
@pytest.mark.torch
def test_readme_quick_start_from_the_wheel_in_a_fresh_venv(tmp_path):
    python = os.environ.get("REPROMATRIX_TEST_PY_T214")
    if not python:
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T214")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bin_dir = venv / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    home = tmp_path / "home"
    home.mkdir()
    cwd = ROOT  # `pip install .` runs in the checkout; everything after it in the user's folder
    for line in quick_start():
        argv = shlex.split(line.replace("/path/to/python", python))
        if argv[:2] == ["mkdir", "my-matrix"]:
            (home / "my-matrix").mkdir()
            cwd = home / "my-matrix"
            continue
        if argv[0] == "python3":
            argv[0] = str(bin_dir / "python")
        elif argv[0] == "repromatrix":
            argv[0] = str(bin_dir / "repromatrix")
        out = run(argv, cwd, env)
        if argv[1:2] == ["plan"]:
            assert "my_first_bug" in out
    empty = home / "empty"
    empty.mkdir()
    proc = subprocess.run([str(bin_dir / "repromatrix"), "plan"], cwd=empty, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "repromatrix init" in proc.stderr, proc.stderr
    package = Path(run([str(bin_dir / "python"), "-c", "import repromatrix, sys; "
                        "sys.stdout.write(repromatrix.__file__)"], home, env)).parent
    assert ROOT not in package.parents, f"the venv imports the checkout: {package}"
    site = cwd / "site"
    index = (site / "index.html").read_text(encoding="utf-8")
    for asset in ("report.css", "report.js"):
        assert f"static/{asset}" in index
        shipped = (package / "resources" / "report" / "static" / asset).read_bytes()
        assert (site / "static" / asset).read_bytes() == shipped and len(shipped) > 1000
    records = [json.loads(line) for p in (cwd / "results").rglob("*.jsonl")
               for line in p.read_text().splitlines()]
    assert [(r["status"], r["signature"], r["workaround"]) for r in records] == \
        [("fail", "int_scale_factor", "pass")], "the example repro decided by its signature"


@pytest.mark.slow
def test_check_answers_offline_from_the_wheel_in_a_fresh_venv(wheel, tmp_path):
    """`repromatrix check` from the installed wheel, in a folder outside the checkout, for each
    kind of input (pins, a requirements file, an NGC release, a store, a page's results.json.gz,
    an interpreter): the published records' snapshot and the JSON schema ship inside it."""
    uv = shutil.which("uv")
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run([uv, "venv", "--python", sys.executable, str(venv)], tmp_path, env)
    proc = subprocess.run([uv, "pip", "install", "--python", str(venv / "bin" / "python"), str(wheel)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        pytest.skip(f"the wheel's dependencies could not be installed here: {proc.stderr[-500:]}")
    home = tmp_path / "home"
    home.mkdir()

    def check(*args: str) -> tuple[int, dict]:
        proc = subprocess.run([str(venv / "bin" / "repromatrix"), "check", *args, "--format", "json"],
                              cwd=home, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode in (0, 1), (args, proc.stderr[-2000:])
        return proc.returncode, json.loads(proc.stdout)

    pins = ("torch==2.4.1", "torch-tensorrt==2.4.0", "torchvision==0.19.1")
    code, answer = check(*pins)
    assert code == 1 and "deform_conv2d_device" in answer["affected"]
    assert answer["source"]["kind"] == "snapshot" and answer["source"]["cells"] > 20
    # the deform_conv2d report's own pins, torchvision not typed: taken as the table pairs it
    code, partial = check("torch==2.4.1", "torch-tensorrt==2.4.0")
    assert code == 1 and "deform_conv2d_device" in partial["affected"]
    assert "torchvision" in partial["environment"]["inferred"]
    typo = subprocess.run([str(venv / "bin" / "repromatrix"), "check", "torch==2.41"], cwd=home,
                          env=env, capture_output=True, text=True, timeout=300)
    assert typo.returncode == 2 and "2.4.1" in typo.stderr, typo.stderr
    ngc = {b["id"]: b for b in check("--ngc", "26.09")[1]["bugs"]}  # torch 2.14.0a0: as 2.14
    assert ngc["export_dynamic_shapes_var_kwargs"]["verdict"] == "not affected"
    # every other kind of input, from the same installed wheel
    (home / "requirements.txt").write_text("\n".join(pins) + "\n")
    assert check("-r", "requirements.txt")[1]["affected"] == answer["affected"]
    assert check("--ngc", "24.07")[1]["source"]["kind"] == "snapshot"
    store = shutil.copytree(ROOT / "results" / "published", tmp_path / "store")
    assert check(*pins, "--results", str(store))[1]["affected"] == answer["affected"]
    site = tmp_path / "site"
    run([str(venv / "bin" / "repromatrix"), "report", "--matrix", str(store / "matrix.yaml"),
         "--results", str(store), "--out", str(site)],
        home, env)
    assert check(*pins, "--from", str(site / "results.json.gz"))[1]["affected"] == answer["affected"]
    python = os.environ.get("REPROMATRIX_TEST_PY_T213")  # a torch interpreter, probed
    if python:
        versions = check("--python", python)[1]["environment"]["versions"]
        assert versions["torch"].startswith("2.13.0"), versions
    package = Path(run([str(venv / "bin" / "python"), "-c", "import repromatrix, sys; "
                        "sys.stdout.write(repromatrix.__file__)"], home, env)).parent
    assert ROOT not in package.parents, f"the venv imports the checkout: {package}"
    import jsonschema

    schema = json.loads((package / "data" / "check.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(answer, schema, cls=jsonschema.Draft202012Validator)
