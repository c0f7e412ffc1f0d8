"""The pre-commit hook's entry (`python -m repromatrix.cli.hook`): check's options told from
the files pre-commit passes, each file checked on its own, the worst exit code."""

from __future__ import annotations

from pathlib import Path

from repromatrix.cli.hook import main, split


def test_options_and_their_values_are_told_from_the_files() -> None:
    assert split(["--ignore", "a.txt", "--format", "json", "requirements.txt", "x/requirements-gpu.txt"]) \
        == (["--ignore", "a.txt", "--format", "json"], ["requirements.txt", "x/requirements-gpu.txt"])
    assert split(["--ignore=bug", "r.txt"]) == (["--ignore=bug"], ["r.txt"])


def test_each_file_on_its_own_and_the_worst_exit(tmp_path: Path, capsys) -> None:
    clean = tmp_path / "requirements.txt"
    clean.write_text("torch==2.4.1\n")
    bad = tmp_path / "requirements-trt.txt"
    bad.write_text("torch==2.4.1\ntorchvision==0.19.1\ntorch-tensorrt==2.4.0\n")
    assert main([str(bad)]) == 1
    assert "== " not in capsys.readouterr().out            # one file: no header
    assert main([str(bad), str(tmp_path / "missing.txt")]) == 2
    out = capsys.readouterr().out
    assert f"== {bad}" in out and "deform_conv2d_device" in out
    assert main([]) == 0
