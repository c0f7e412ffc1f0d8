"""`repromatrix export slurm` without a cluster: the scripts' content, syntax and bad options."""

from __future__ import annotations

import subprocess

import pytest

from repromatrix.cli import main
from repromatrix.paths import PROJECT_ROOT

CPU = ["--matrix", str(PROJECT_ROOT / "examples" / "cpu-only.yaml"), "--all"]


def test_scripts_run_each_shard_into_its_own_store_then_report(tmp_path, capsys):
    jobs = tmp_path / "jobs"
    mine = tmp_path / "mine"
    mine.mkdir()
    assert main(["export", "slurm", *CPU, "--repros", str(mine), "--shards", "3", "--dir", str(jobs),
                 "--results", str(tmp_path / "res"), "--out", str(tmp_path / "site"),
                 "--sbatch=--gpus-per-task=1", "--repromatrix", "/opt/rm/bin/repromatrix",
                 "--", "--timeout", "300", "--ca-bundle", "/etc/ca.pem"]) == 0
    assert "3 shards" in capsys.readouterr().out
    shard, report, submit = (jobs / n for n in ("shard.sbatch", "report.sbatch", "submit.sh"))
    for script in (shard, report, submit):
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    text = shard.read_text()
    assert "#SBATCH --array=1-3" in text and "#SBATCH --gpus-per-task=1" in text
    catalog = f"--matrix {PROJECT_ROOT}/examples/cpu-only.yaml --repros {mine}"
    assert (f"exec /opt/rm/bin/repromatrix run {catalog} --all "
            f"--backend venv --timeout 300 --ca-bundle /etc/ca.pem --shard \"$k/3\" "
            f"--results {tmp_path}/res/shard-\"$k\"") in text
    assert (f"report {catalog} --results \"${{stores[@]}}\" --out {tmp_path}/site"
            in report.read_text())
    assert "--dependency=afterany:\"$array\"" in submit.read_text()
    assert (tmp_path / "res" / "slurm-logs").is_dir()


@pytest.mark.parametrize("extra, message", [
    (["--shards", "0"], "--shards 0"),
    (["--shards", "2", "--sbatch=-p gpu"], "--sbatch '-p gpu'"),
    (["--shards", "2", "--", "--shard", "1/2"], "'--shard' after `--`"),
    (["--shards", "2", "-k", "no-such-cell"], "selects no cells"),
])
def test_bad_options_exit_2(tmp_path, capsys, extra, message):
    assert main(["export", "slurm", *CPU, "--dir", str(tmp_path / "j"), *extra]) == 2
    assert message in capsys.readouterr().err
