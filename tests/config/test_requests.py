"""Commands build frozen requests and `execute` them; nothing writes into the namespace."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from repromatrix.cli import build, main, plan, report
from repromatrix.cli import matrix as matrix_command
from repromatrix.cli import run as run_command

CLI = Path(__file__).resolve().parents[2] / "src" / "repromatrix" / "cli"
REQUESTS = (run_command.RunRequest, build.BuildRequest, report.ReportRequest, plan.PlanRequest,
            matrix_command.MatrixRequest)


def _matrix(tmp_path: Path) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text("stacks: [{kind: pip, torch: '2.14'}]\n")
    return path


@pytest.mark.parametrize("request_type", REQUESTS, ids=lambda t: t.__name__)
def test_a_request_is_frozen(request_type) -> None:
    assert dataclasses.is_dataclass(request_type)
    assert request_type.__dataclass_params__.frozen


def test_a_built_request_refuses_changes(tmp_path) -> None:
    request = report.ReportRequest(results=(tmp_path,), out=tmp_path / "site")
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.out = tmp_path  # type: ignore[misc]


def test_matrix_runs_and_reports_through_requests(tmp_path, monkeypatch) -> None:
    got: dict[str, object] = {}

    def fake(name: str, code: int):
        def execute(request) -> int:
            got[name] = request
            return code
        return execute

    monkeypatch.setattr(run_command, "execute", fake("run", 0))
    monkeypatch.setattr(report, "execute", fake("report", 4))
    results, site = tmp_path / "results", tmp_path / "site"
    code = main(["matrix", "--matrix", str(_matrix(tmp_path)), "--results", str(results),
                 "--out", str(site), "--check", "--timeout", "42", "-k", "pip", "--ca-bundle",
                 "none"])
    assert code == 4  # the run's 0, then the report's code
    ran, page = got["run"], got["report"]
    assert isinstance(ran, run_command.RunRequest) and isinstance(page, report.ReportRequest)
    assert ran.selection.command == "matrix" and ran.selection.expr == "pip"
    assert ran.options.results == results and ran.options.repro_timeout == 42
    assert ran.options.sources["repro_timeout"] == "command line"
    assert page.results == (results,) and page.out == site and page.check
    assert page.matrix_file == tmp_path / "matrix.yaml"


def test_run_builds_its_request_from_the_command_line(tmp_path, monkeypatch) -> None:
    got = []
    monkeypatch.setattr(run_command, "execute", lambda request: got.append(request) or 0)
    assert main(["run", "--matrix", str(_matrix(tmp_path)), "--results", str(tmp_path / "r"),
                 "--shard", "1/2", "--ca-bundle", "none"]) == 0
    [request] = got
    assert request.shard.index == 1 and request.script is None
    assert request.matrix.path == tmp_path / "matrix.yaml"


def _writes_into_namespace(tree: ast.AST) -> list[int]:
    """Lines that assign into a namespace: ``args.x = ``, ``setattr(args, ...)``,
    ``vars(args)[...] =``, ``args.__dict__[...] =``."""
    names = {"args", "namespace", "ns"}
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None \
                and "Namespace" in ast.unparse(node.annotation):
            names.add(node.arg)
    lines = []
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("setattr", "delattr") and node.args \
                and isinstance(node.args[0], ast.Name) and node.args[0].id in names:
            lines.append(node.lineno)
        for target in targets:
            while isinstance(target, ast.Subscript):
                target = target.value
                if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) \
                        and target.func.id == "vars":
                    lines.append(node.lineno)
            if isinstance(target, ast.Attribute):
                base = target.value
                while isinstance(base, ast.Attribute):
                    base = base.value
                if isinstance(base, ast.Name) and base.id in names:
                    lines.append(node.lineno)
    return lines


def test_no_cli_module_writes_into_the_argparse_namespace() -> None:
    modules = sorted(CLI.glob("*.py"))
    assert len(modules) > 10
    found = {p.name: lines for p in modules
             if (lines := _writes_into_namespace(ast.parse(p.read_text(encoding="utf-8"))))}
    assert not found, f"assignments into an argparse namespace: {found}"


def test_the_namespace_check_sees_each_kind_of_write() -> None:
    for text in ("args.backend = 'venv'", "setattr(args, 'x', 1)", "vars(args)['x'] = 1",
                 "args.__dict__['x'] = 1", "def f(a: argparse.Namespace):\n    a.x = 1"):
        assert _writes_into_namespace(ast.parse(text)), text
    assert not _writes_into_namespace(ast.parse("x = args.backend\nrequest.y = 1"))
