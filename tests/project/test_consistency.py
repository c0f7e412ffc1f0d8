"""Consistency over discovered items: every repro is described, run and documented;
every nox session and CLI command is documented; the design's layout is there."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from repromatrix import paths
from repromatrix.cli import build_parser
from repromatrix.config.catalog import load_catalog
from repromatrix.config.matrix import load_matrix

ROOT = paths.PROJECT_ROOT
CATALOG = load_catalog(paths.repros_dir())
PROBE_KEYS = {"python", "torch", "torchvision", "torch_tensorrt", "tensorrt", "onnx", "onnxscript",
              "onnxruntime", "ngc"}
STATUSES = {"pass", "fail", "error", "crash", "timeout", "skip", "broken"}


def test_the_known_bugs_are_in_the_catalog():
    assert set(CATALOG) == {
        "deform_conv2d_device",
        "dynamic_unet_shapes",
        "onnx_export_device",
        "torchscript_device_mix",
        "ts_device_gpu_id",
        "onnx_ts_rshift_signed",
        "export_dynamic_shapes_var_kwargs",
        "export_dynamic_shapes_var_kwargs_nested",
        "onnx_dynamic_axes_names_dropped",
        "onnx_export_fallback_removed",
        "dynamo_global_partitioner_module_children",
        "dynamo_trace_mixed_static_dynamic_inputs",
        "dynamo_require_full_compilation_ignored",
        "ts_dla_memory_sizes_ignored",
        "tv_masks_to_boxes_empty",
        "pt2e_quant_removed",
        "export_capture_pre_autograd_graph_removed",
        "export_program_call_removed",
        "trt_convert_method_inputs_dropped",
        "trt_import_root_logger",
        "trt_save_torchscript_refused",
        "onnx_gru_linear_before_reset",
        "onnx_fuse_batchnorm_bias_collision",
        "trt_full_like_decomposition",
        "trt_save_retrace_needs_inputs",
        "trt_unbacked_output_shape",
        "onnx_export_dynamo_default",
        "export_strict_default_changed",
        "onnx_export_unknown_kwargs_refused",
        "onnx_unbind_size_one",
    }


@pytest.mark.parametrize("repro", sorted(CATALOG))
def test_every_repro_is_described_with_links_and_an_expectation(repro):
    r = CATALOG[repro]
    assert r.title and r.description
    assert r.upstream and all(u.startswith("https://") for u in r.upstream)
    assert r.expect, "the documented expectation lets the page flag contradictions"
    for rule in r.expect:
        assert rule["status"] in STATUSES
        assert set(rule.get("when", {})) <= PROBE_KEYS


@pytest.mark.parametrize("repro", sorted(CATALOG))
def test_every_repro_imports_only_stdlib_the_stack_and_the_protocol(repro):
    tree = ast.parse(Path(CATALOG[repro].path).read_text())
    allowed = {"protocol", "_torchutil", "_standin", "torch", "torchvision", "torch_tensorrt", "tensorrt",
               "onnx", "onnxscript", "onnxruntime", "numpy", "__future__"}
    stdlib = set(sys.stdlib_module_names)
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        for name in names:
            assert name.split(".")[0] in allowed | stdlib, f"{repro} imports {name}"


def test_every_repro_runs_on_every_published_stack_by_default():
    matrix = load_matrix(paths.default_matrix())
    assert all(set(s.repros) == set(CATALOG) for s in matrix.stacks)


def test_host_side_never_imports_torch():
    for path in (ROOT / "src" / "repromatrix").rglob("*.py"):
        if "data" in path.relative_to(ROOT / "src" / "repromatrix").parts:
            continue  # files `repromatrix init` writes out (a repro is container side)
        text = path.read_text()
        assert not re.search(r"^\s*(import|from)\s+(torch|torchvision|torch_tensorrt)\b", text, re.M), path


def test_every_nox_session_has_a_one_line_docstring():
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    sessions = [f for f in tree.body if isinstance(f, ast.FunctionDef)
                and any("session" in ast.unparse(d) for d in f.decorator_list)]
    assert {f.name for f in sessions} >= {"matrix", "build", "run", "report", "bisect", "tests", "fast",
                                          "lint"}
    for f in sessions:
        doc = ast.get_docstring(f)
        assert doc and "\n" not in doc.strip(), f.name


def test_readme_documents_every_command_and_exit_code():
    """The command synopsis and exit codes are in docs/command-line.md; the two commands a
    newcomer needs are in README.md."""
    reference = (ROOT / "docs" / "command-line.md").read_text()
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for command in sub.choices:
        assert f"repromatrix {command}" in reference
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |"):
        assert code in reference
    readme = (ROOT / "README.md").read_text()
    assert "nox -s matrix" in readme and "nox -s tests" in readme


def test_design_layout_is_present():
    for name in ("noxfile.py", "matrix.yaml", "repros", "images", "report", "tests", "src/repromatrix",
                 "benchmarks", ".ci/run"):
        assert (ROOT / name).exists(), name


def test_every_environment_variable_is_documented_and_read_in_one_place():
    from repromatrix import envvars

    readme = (ROOT / "docs" / "command-line.md").read_text()
    for name in envvars.VARIABLES:
        assert f"`{name}`" in readme, f"docs/command-line.md does not list {name}"
    for path in (ROOT / "src" / "repromatrix").rglob("*.py"):
        if path.name == "envvars.py":
            continue
        # REPROMATRIX_RESULT is the protocol's own (container side, written into generated repros)
        text = path.read_text().replace('os.environ.get("REPROMATRIX_RESULT")', "")
        assert "os.environ.get(\"REPROMATRIX" not in text and "getenv(\"REPROMATRIX" not in text, \
            f"{path.name} reads a REPROMATRIX_* variable itself: use envvars.read"
        for name in re.findall(r"envvars\.read\(\"(\w+)\"", text):
            assert name in envvars.VARIABLES


# Variables read in src/ that are no user setting: REPROMATRIX_RESULT is the protocol's own
# (set by the runner for a generated script wrapper, container side).
NOT_SETTINGS = {"REPROMATRIX_RESULT"}


def test_every_variable_the_host_side_reads_is_in_the_readme():
    """Any ``os.environ.get("X")`` / ``os.environ["X"]`` / ``os.getenv("X")`` / ``envvars.read``
    / ``envvars.host`` name in src/ (XDG_CACHE_HOME was read and not listed once)."""
    from repromatrix import envvars

    readme = (ROOT / "docs" / "command-line.md").read_text()
    section = readme[readme.index("## Environment variables"):]
    section = section[:section.index("\n## ", 1)]
    pattern = re.compile(r"(?:environ\.get\(|environ\[|getenv\(|envvars\.(?:read|host)\()"
                         r"\s*[\"']([A-Z][A-Z0-9_]+)[\"']")
    read: set[str] = set(envvars.HOST_CA_VARIABLES)
    for path in (ROOT / "src" / "repromatrix").rglob("*.py"):
        read |= set(pattern.findall(path.read_text()))
    assert {"XDG_CACHE_HOME", "REPROMATRIX_VENV_DIR"} <= read, "the scan finds the reads"
    missing = sorted(n for n in read - NOT_SETTINGS if f"`{n}`" not in section)
    assert not missing, f"docs/command-line.md's environment-variable section does not list {missing}"


def test_architecture_names_every_record_field_and_engine():
    import dataclasses

    from repromatrix.engines import ENGINES
    from repromatrix.store.record import Result

    text = (ROOT / "ARCHITECTURE.md").read_text()
    for f in dataclasses.fields(Result):
        assert f"`{f.name}`" in text, f"ARCHITECTURE.md's record table lacks {f.name}"
    for name in ENGINES:
        assert f"`{name}`" in text
    backend = build_parser()._subparsers._group_actions[0].choices["run"]._option_string_actions[
        "--backend"]
    assert set(backend.metavar.split("|")) == set(ENGINES)  # the help names every engine


def test_readme_option_table_is_the_declaration():
    """docs/command-line.md's option table is generated from config/flags.py, never edited
    by hand."""
    from repromatrix.config.flags import markdown_table

    readme = (ROOT / "docs" / "command-line.md").read_text()
    assert markdown_table() in readme, (
        "docs/command-line.md's option table differs from config/flags.py; regenerate it with\n"
        "python -c 'from repromatrix.config.flags import markdown_table; print(markdown_table())'")


def test_each_shared_option_is_declared_once_and_parsed_from_it():
    """Every flag of the declaration reaches the parser with its declared help; no command
    adds a shared flag its own way."""
    from repromatrix.config.flags import OPTIONS, _help

    declared = {flag: opt for opt in OPTIONS for flag in opt.flags}
    assert len(declared) == sum(len(o.flags) for o in OPTIONS), "a flag is declared twice"
    own_ways = {("report", "--matrix"), ("report", "--results"), ("export slurm", "--backend"),
                ("export slurm", "--results"), ("export osv", "--results"), ("env", "--python"),
                ("compat update", "--matrix"), ("bisect", "--backend"), ("check", "--python"),
                ("check", "--results")}
    seen = 0
    for name, parser in _subparsers(build_parser()):
        for action in parser._actions:
            for flag in action.option_strings:
                if flag in declared and (name, flag) not in own_ways:
                    assert action.help == _help(declared[flag]), f"{name} {flag}"
                    seen += 1
    assert seen > len(OPTIONS), "the commands take the declared options"


def _subparsers(parser, prefix=""):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix} {name}".strip()
                yield full, sub
                yield from _subparsers(sub, full)


def test_exit_codes_are_the_readme_table():
    from repromatrix.errors import Exit

    readme = (ROOT / "docs" / "command-line.md").read_text()
    section = readme[readme.index("## Exit codes"):]
    section = section[:section.index("\n## ", 1)]
    listed = {int(m) for m in re.findall(r"^\| (\d+) \|", section, re.M)}
    assert listed == {int(e) for e in Exit}


def test_readme_names_the_docker_labels_the_harness_sets():
    """Labels are how users find what the harness left on their daemon: each one the code
    sets is in docs/caching.md, under the name the code uses."""
    from repromatrix.engines.docker import build, daemon
    from repromatrix.engines.images import image_spec
    from repromatrix.model import Settings, Stack

    readme = (ROOT / "docs" / "caching.md").read_text()
    labels = [v for mod in (daemon, build) for k, v in vars(mod).items() if k.startswith("LABEL_")]
    assert "repromatrix.run" in labels and len(labels) >= 5
    lane = Stack(id="t", kind="pip", torch="2.4.1", torch_tensorrt="2.4.0", index="pypi")
    labels += image_spec(lane, Settings(extra_index_urls=(), packages=()), standin=("tensorrt",),
                         harness_dir=paths.harness_dir()).labels
    for label in labels:
        assert f"`{label}" in readme, label
