"""Each option resolved the same way: command line, then variable, then matrix.yaml, then
the default, with the place each value came from kept in ``RunOptions.sources``."""

from __future__ import annotations

from pathlib import Path

import pytest

from repromatrix.cli import build_parser
from repromatrix.config.flags import reproduce_args
from repromatrix.config.matrix import load_matrix
from repromatrix.config.resolve import run_options
from repromatrix.errors import ConfigError, UsageError
from repromatrix.model import Settings


def _matrix(tmp_path: Path, defaults: str = ""):
    path = tmp_path / "matrix.yaml"
    path.write_text(f"{defaults}stacks: [{{kind: pip, torch: '2.14'}}]\n")
    return load_matrix(path)


def test_a_variable_outranks_the_default_and_the_command_line_outranks_both(tmp_path) -> None:
    matrix = _matrix(tmp_path)
    env = {"REPROMATRIX_PYTHON": "/env/python"}
    given = run_options(matrix, {"results": tmp_path, "python": "/cli/python"}, environ=env)
    assert (given.python, given.sources["python"]) == ("/cli/python", "command line")
    from_env = run_options(matrix, {"results": tmp_path}, environ=env)
    assert (from_env.python, from_env.sources["python"]) == ("/env/python", "REPROMATRIX_PYTHON")
    assert from_env.local_python == "/env/python"
    neither = run_options(matrix, {"results": tmp_path}, environ={})
    assert (neither.python, neither.sources["python"]) == (None, "default")
    assert neither.local_python == "python3"


def test_the_process_environment_is_read_when_none_is_given(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("REPROMATRIX_PYTHON", "/from/env")
    options = run_options(_matrix(tmp_path), {"results": tmp_path})
    assert options.sources["python"] == "REPROMATRIX_PYTHON" and options.python == "/from/env"


def test_the_matrix_outranks_the_default_and_the_command_line_outranks_it(tmp_path) -> None:
    matrix = _matrix(tmp_path, "defaults: {repro_timeout: 30, backend: venv}\n")
    options = run_options(matrix, {"results": tmp_path})
    assert options.repro_timeout == 30 and options.backend == "venv"
    assert options.sources["repro_timeout"] == "matrix.yaml defaults.repro_timeout"
    assert options.sources["backend"] == "matrix.yaml defaults.backend"
    assert options.sources["stack_timeout"] == "default"  # the file does not set it
    assert options.stack_timeout == Settings.stack_timeout
    given = run_options(matrix, {"results": tmp_path, "timeout": 42, "backend": "docker"})
    assert (given.repro_timeout, given.sources["repro_timeout"]) == (42, "command line")
    assert (given.backend, given.sources["backend"]) == ("docker", "command line")


def test_every_field_an_option_fills_has_its_source(tmp_path) -> None:
    args = build_parser().parse_args(["run", "--results", str(tmp_path), "--jobs", "2"])
    options = run_options(_matrix(tmp_path), args, environ={})
    assert options.sources["results"] == options.sources["jobs"] == "command line"
    for name in ("repeat", "gpus", "keep", "rerun", "registry", "image_budget_gb", "standins"):
        assert options.sources[name] == "default", name
    assert options.jobs == 2 and options.repeat == 1 and options.gpus == ()


def test_a_budget_of_zero_is_given(tmp_path) -> None:
    options = run_options(_matrix(tmp_path), {"results": tmp_path, "image_budget": 0.0})
    assert options.image_budget_gb == 0.0 and options.sources["image_budget_gb"] == "command line"


def test_a_command_own_default_takes_the_place_of_the_matrix(tmp_path) -> None:
    matrix = _matrix(tmp_path, "defaults: {backend: docker}\n")
    options = run_options(matrix, {"results": tmp_path}, defaults={"backend": "venv"})
    assert options.backend == "venv" and options.sources["backend"] == "default"
    given = run_options(matrix, {"results": tmp_path, "backend": "local"},
                        defaults={"backend": "venv"})
    assert given.backend == "local" and given.sources["backend"] == "command line"


def test_a_bad_value_names_where_it_came_from(tmp_path) -> None:
    with pytest.raises(UsageError, match=r"^--backend 'dockre': unknown engine"):
        run_options(_matrix(tmp_path), {"results": tmp_path, "backend": "dockre"})
    with pytest.raises(ConfigError) as info:
        run_options(_matrix(tmp_path, "defaults: {backend: dockre}\n"), {"results": tmp_path})
    assert "defaults.backend" in str(info.value) and "matrix.yaml" in str(info.value)
    with pytest.raises(UsageError, match=r"^--registry"):
        run_options(_matrix(tmp_path), {"results": tmp_path, "registry": "https://x/y"})


def test_a_reproduce_line_carries_python_only_from_the_command_line(tmp_path) -> None:
    matrix = _matrix(tmp_path)
    env = {"REPROMATRIX_PYTHON": "/env/python"}
    from_env = run_options(matrix, {"results": tmp_path, "backend": "local"}, environ=env)
    assert "--python" not in reproduce_args(matrix, from_env)
    given = run_options(matrix, {"results": tmp_path, "backend": "local", "python": "/cli/py"},
                        environ=env)
    line = reproduce_args(matrix, given)
    assert line[line.index("--python") + 1] == "/cli/py"


def test_sources_do_not_make_options_differ(tmp_path) -> None:
    matrix = _matrix(tmp_path)
    env = {"REPROMATRIX_PYTHON": "/p"}
    assert run_options(matrix, {"results": tmp_path}, environ=env) == \
        run_options(matrix, {"results": tmp_path, "python": "/p"}, environ={})
