"""Infrastructure failures say their cause and fix: build logs diagnosed, the host's CA bundle
forwarded by default, a run whose every cell is broken exits 3.

The docker test is the proxy case for real: this machine's TLS is intercepted, so an image
built without the host's CA bundle cannot reach PyPI, and one built with it (the default) can.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.docker import PUBLIC_BASE

from repromatrix.config.options import host_ca_bundle, load_matrix_with
from repromatrix.engines.diagnose import diagnose, explain

ROOT = Path(__file__).resolve().parents[2]

# Real failure text, as pip, uv and docker print it (trimmed to the telling lines).
PIP_TLS = ("WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) "
           "after connection broken by 'SSLError(SSLCertVerificationError(1, '[SSL: "
           "CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer "
           "certificate (_ssl.c:1006)'))': /simple/filelock/\n"
           "ERROR: No matching distribution found for filelock")
UV_DNS = ("error: Failed to fetch: `https://pypi.org/simple/torch/`\n  Caused by: Request failed "
          "after 3 retries\n  Caused by: error sending request for url (https://pypi.org/simple/"
          "torch/)\n  Caused by: dns error: failed to lookup address information: Temporary "
          "failure in name resolution")
PIP_MISSING = ("ERROR: Could not find a version that satisfies the requirement torch==0.0.1 "
               "(from versions: 2.13.0)\nERROR: No matching distribution found for torch==0.0.1")
DISK = "OSError: [Errno 28] No space left on device: '/opt/venv/lib/python3.11/site-packages/x'"


@pytest.mark.parametrize("text, words", [
    (PIP_TLS, ["TLS certificate", "--ca-bundle"]),
    (UV_DNS, ["could not be resolved", "--find-links"]),
    (PIP_MISSING, ["does not exist", "torch==0.0.1"]),
    (DISK, ["disk is full"]),
])
def test_build_logs_are_diagnosed(text, words):
    found = str(diagnose(text))
    assert all(w in found for w in words), found


@pytest.mark.parametrize("text", [
    "Collecting certifi\n  Downloading certifi-2026.1.1-py3-none-any.whl (certificate bundle)",
    "Successfully installed torch-2.13.0 (resolved name torch)",
    "",
])
def test_near_misses_are_not_diagnosed(text):
    assert diagnose(text) is None


def test_explain_adds_cause_fix_and_log_path():
    text = explain("image build failed: exited 1", PIP_TLS, Path("/w/logs/s.log"))
    assert text.startswith("image build failed: exited 1 — TLS certificate")
    assert text.endswith("(log: /w/logs/s.log)")
    assert explain("x", "nothing telling", None) == "x"


def test_the_hosts_ca_bundle_is_found_in_the_environment_or_pips_config(tmp_path, monkeypatch):
    pem = tmp_path / "corp-ca.pem"
    pem.write_text("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "REPROMATRIX_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\ncert = {pem}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert host_ca_bundle() == (str(pem), f"pip's config {conf}")
    monkeypatch.setenv("SSL_CERT_FILE", str(pem))
    assert host_ca_bundle() == (str(pem), "SSL_CERT_FILE")

    said: list[str] = []
    matrix = tmp_path / "m.yaml"
    matrix.write_text("stacks: [{kind: pip, torch: '2.13.0', torchvision: none, "
                      "torch_tensorrt: none, index: pypi}]\n")
    forwarded = load_matrix_with(matrix, log=said.append)
    assert forwarded.settings.ca_bundle == str(pem.resolve()) and "--ca-bundle none" in said[0]
    assert load_matrix_with(matrix, ca_bundle="none", log=said.append).settings.ca_bundle is None
    monkeypatch.setenv("REPROMATRIX_CA_BUNDLE", "none")
    assert load_matrix_with(matrix, log=said.append).settings.ca_bundle is None
    assert len(said) == 1, "said once, only when forwarding"


OK_REPRO = '''"""A user's repro: torch adds on the CPU."""
import protocol

META = {"id": "infra_ok", "title": "torch adds", "upstream": [], "description": "", "requires": [],
        "expect": []}


def body(r):
    def add(s):
        import torch
        s.check_close(torch.ones(2) + torch.ones(2), torch.full((2,), 2.0), "1 + 1 == 2")
    r.stage("add", add)


if __name__ == "__main__":
    raise SystemExit(protocol.main(META, [], body))
'''


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "repromatrix.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=1500)


@pytest.mark.docker
@pytest.mark.slow
def test_behind_the_proxy_without_a_ca_the_run_exits_3_and_says_why(
        tmp_path, local_base_image, torch_wheelhouse, test_ca_bundle):
    if not test_ca_bundle:
        pytest.skip("this machine's pip has no extra CA bundle (TLS is not intercepted here)")
    (tmp_path / "repros").mkdir()
    (tmp_path / "repros" / "infra_ok.py").write_text(OK_REPRO)
    (tmp_path / "matrix.yaml").write_text(
        # the install the docker engine's tests built (same base, CA, wheelhouse, pins): cached
        "defaults: {shm_size: 1g, extra_index_urls: [], packages: []}\n"
        "stacks: [{kind: pip, id: infra-torch2.13.0, torch: '2.13.0', torchvision: none, "
        "torch_tensorrt: none, index: pypi}]\n")
    common = ["run", "--matrix", "matrix.yaml", "--all", "-k", "infra_ok", "--base-image",
              f"{PUBLIC_BASE}={local_base_image}", "--find-links", str(torch_wheelhouse)]
    blocked = _cli(*common, "--ca-bundle", "none", "--results", "r1", cwd=tmp_path)
    assert blocked.returncode == 3, blocked.stderr[-3000:]
    assert "every cell is broken" in blocked.stderr
    assert "certificate" in blocked.stderr and "--ca-bundle" in blocked.stderr, blocked.stderr[-2000:]

    works = _cli(*common, "--results", "r2", cwd=tmp_path)
    assert works.returncode == 0, works.stderr[-3000:]
    assert "forwarding the host's CA bundle" in works.stderr
    assert "infra-torch2.13.0--infra_ok: pass" in works.stdout, works.stdout[-3000:]
