"""Each option declared once (config/flags.py): what a pasted reproduce line carries."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from repromatrix.cli import build_parser
from repromatrix.config.flags import reproduce_args
from repromatrix.config.matrix import load_matrix
from repromatrix.config.resolve import run_options

ROOT = Path(__file__).resolve().parents[2]


def _options(*argv: str):
    args = build_parser().parse_args(["run", *argv])
    matrix = load_matrix(args.matrix)
    return matrix, run_options(matrix, args)


def test_a_timeout_the_run_changed_is_carried(tmp_path):
    matrix, options = _options("--results", str(tmp_path), "--timeout", "42",
                               "--stack-timeout", "99", "--build-timeout", "77")
    line = reproduce_args(matrix, options)
    for flag, value in (("--timeout", "42"), ("--stack-timeout", "99"), ("--build-timeout", "77")):
        assert line[line.index(flag) + 1] == value


def test_a_timeout_is_carried_exactly(tmp_path):
    matrix, options = _options("--results", str(tmp_path), "--timeout", "1234.5678",
                               "--stack-timeout", "100000.4")
    line = reproduce_args(matrix, options)
    assert line[line.index("--timeout") + 1] == "1234.5678"
    assert line[line.index("--stack-timeout") + 1] == "100000.4"


def test_the_matrix_own_timeouts_are_not_repeated(tmp_path):
    matrix, options = _options("--results", str(tmp_path))
    line = reproduce_args(matrix, options)
    assert not {"--timeout", "--stack-timeout", "--build-timeout"} & set(line)
    assert line[:2] == ["--matrix", str(Path(matrix.path).resolve())]
    assert line[line.index("--results") + 1] == str(tmp_path.resolve())


def test_a_reproduce_line_parses_back_to_the_same_options(tmp_path):
    matrix, options = _options("--results", str(tmp_path), "--timeout", "42", "--repeat", "3",
                               "--backend", "venv", "--standin", "tensorrt")
    again = build_parser().parse_args(["run", *shlex.split(shlex.join(reproduce_args(matrix, options)))])
    assert run_options(load_matrix(again.matrix), again) == options


def test_help_names_where_else_an_option_is_set():
    out = subprocess.run([sys.executable, "-m", "repromatrix", "run", "--help"], capture_output=True,
                         text=True, cwd=ROOT, check=True).stdout
    out = " ".join(out.split())  # argparse wraps lines
    assert "$REPROMATRIX_CA_BUNDLE" in out and "matrix defaults.repro_timeout" in out
