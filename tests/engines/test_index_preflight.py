"""The package-index preflight: unreachable indexes end a run with exit 3 in seconds.

Real sockets only, and only loopback targets: a closed port, a listener that never
answers TLS, a TLS server whose certificate only a given CA bundle trusts, and a name
under ``.invalid`` (never resolves). "Every index unreachable" runs the real command
line in a network namespace of its own (``unshare -n``: loopback only), where PyPI, the
PyTorch wheel index and NVIDIA's index cannot resolve, as on a machine without them.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from repromatrix.engines.indexes import IndexUnreachable, check_indexes, stack_indexes
from repromatrix.model import Settings, Stack

ROOT = Path(__file__).resolve().parents[2]
CU = Stack(id="pip-cu", kind="pip", python="3.11", torch="2.14.1", index="cu130")
PYPI = Stack(id="pip-pypi", kind="pip", python="3.11", torch="2.14.1", index="pypi")
BARE_NGC = Stack(id="ngc-26.01", kind="ngc", ngc="26.01")

MATRIX = """\
defaults:
  extra_index_urls: [https://pypi.nvidia.com]
stacks:
  - {kind: pip, torch: "2.14.1", torch_tensorrt: none, index: cu130}
  - {kind: pip, torch: "2.13.0", torch_tensorrt: none, index: pypi}
"""


def test_a_stack_uses_exactly_the_indexes_its_install_gets() -> None:
    settings = Settings(extra_index_urls=("https://pypi.nvidia.com",), find_links=("/w",))
    assert [(u.role, u.url) for u in stack_indexes(CU, settings)] == [
        ("index", "https://download.pytorch.org/whl/cu130"), ("pypi", "https://pypi.org/simple"),
        ("extra", "https://pypi.nvidia.com")]
    assert [u.role for u in stack_indexes(PYPI, settings)] == ["pypi", "extra"]
    assert stack_indexes(BARE_NGC, settings) == []  # an NGC image with no packages installs nothing
    mirror = "https://mirror.example/simple"
    assert [u.url for u in stack_indexes(PYPI, Settings(), default_index=mirror)] == [mirror]


def test_venv_checks_uvs_own_default_index_instead_of_pypi(tmp_path: Path, monkeypatch,
                                                          closed_port: int) -> None:
    """A machine whose uv installs from a mirror (UV_DEFAULT_INDEX) is judged by that mirror."""
    from repromatrix.config.options import RunOptions
    from repromatrix.engines import EngineContext
    from repromatrix.engines.venv import VenvEngine
    from repromatrix.paths import harness_dir, repros_dir

    if not shutil.which("uv"):
        pytest.skip("uv is not on PATH (pip install uv)")
    monkeypatch.setenv("UV_DEFAULT_INDEX", f"http://127.0.0.1:{closed_port}/simple")
    ctx = EngineContext(settings=Settings(), options=RunOptions(backend="venv"),
                        harness_dir=harness_dir(), repros_dir=repros_dir(), run_id="t",
                        log=lambda line: None)
    with pytest.raises(IndexUnreachable, match=f"127.0.0.1:{closed_port}: TCP.*\n.*uv's default index"):
        VenvEngine(ctx, tmp_path / "venvs").preflight([PYPI])


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: connections are refused


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A listener that accepts TCP (the kernel's backlog) but never says a word."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield s.getsockname()[1]


def test_closed_port_unresolvable_name_and_silent_server_are_named_within_seconds(
        closed_port: int, silent_port: int) -> None:
    urls = (f"http://127.0.0.1:{closed_port}/simple", "https://no-such-index.invalid/simple",
            f"https://127.0.0.1:{silent_port}/simple")
    t0 = time.monotonic()
    with pytest.raises(IndexUnreachable) as info:
        check_indexes([PYPI], Settings(extra_index_urls=urls), where="here", timeout=2.0)
    elapsed = time.monotonic() - t0
    text = str(info.value)
    assert f"127.0.0.1:{closed_port}: TCP: cannot connect" in text
    assert "no-such-index.invalid:443: DNS: the name does not resolve" in text
    assert f"127.0.0.1:{silent_port}: TLS: no handshake" in text
    assert "needed by pip-pypi" in text and "drop the url from `extra_index_urls`" in text
    assert elapsed < 8, f"the hosts are checked in parallel with short timeouts ({elapsed:.1f}s)"


def test_extra_indexes_can_be_optional_but_the_main_index_never_is(closed_port: int) -> None:
    said: list[str] = []
    settings = Settings(extra_index_urls=(f"http://127.0.0.1:{closed_port}/simple",))
    stack = Stack(id="pip-x", kind="pip", python="3.11", torch="2.14.1", index="pypi",
                  packages=("onnx",))
    # venv's case: an unreachable extra index is left out of the install, and said
    check_indexes([Stack(id="none", kind="local")], settings, where="here")  # nothing to install
    with pytest.raises(IndexUnreachable):
        check_indexes([stack], settings, where="here", timeout=2.0)
    try:
        check_indexes([stack], settings, where="here", optional_extras=True, log=said.append,
                      timeout=2.0)
    except IndexUnreachable as exc:  # PyPI itself unreachable here: then that is the reason
        assert "pypi.org" in str(exc) and f"127.0.0.1:{closed_port}" not in str(exc)
    assert any(f"127.0.0.1:{closed_port}" in line and "left out" in line for line in said)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """A TLS server on 127.0.0.1 whose self-signed certificate is in ``ca.pem`` only."""
    if not shutil.which("openssl"):
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "ca.pem")],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(d / "ca.pem", d / "key.pem")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.5)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            try:
                with context.wrap_socket(conn, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], d / "ca.pem"
    stop.set()
    thread.join(2)
    server.close()


def test_tls_is_checked_with_the_ca_bundle_in_use(tls_server: tuple[int, Path]) -> None:
    port, ca = tls_server
    stack = Stack(id="pip-tls", kind="ngc", ngc="26.01", packages=("onnx",))
    url = f"https://127.0.0.1:{port}/simple"
    with pytest.raises(IndexUnreachable, match="certificate is not trusted.*--ca-bundle"):
        check_indexes([stack], Settings(extra_index_urls=(url,)), where="here", timeout=3.0)
    try:
        check_indexes([stack], Settings(extra_index_urls=(url,), ca_bundle=str(ca)), where="here",
                      timeout=3.0)
    except IndexUnreachable as exc:  # PyPI may be unreachable here; the server was trusted
        assert f"127.0.0.1:{port}" not in str(exc)


def _netns_ok() -> bool:
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


def _offline(*argv: str, cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    """``argv`` in a network namespace of its own: only loopback, no name resolves."""
    if not _netns_ok():
        pytest.skip("cannot make a network namespace here (unshare -n needs root)")
    t0 = time.monotonic()
    proc = subprocess.run(["unshare", "-n", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT / "src"),
                               "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    return proc, time.monotonic() - t0


def _assert_names_the_pytorch_index(proc: subprocess.CompletedProcess, elapsed: float) -> None:
    err = proc.stdout + proc.stderr  # nox relays the command's stderr on its stdout
    assert proc.returncode == 3, err
    assert elapsed < 30, f"{elapsed:.1f}s"
    assert "download.pytorch.org:443: DNS" in err
    assert "the PyTorch wheel index https://download.pytorch.org/whl/cu130, needed by " \
           "pip-torch2.14.1-cu130-py3.11" in err
    assert "`index: pypi` in the stacks above" in err and "--find-links DIR" in err
    assert "pypi.org:443" in err and "nothing was built" in err


@pytest.mark.slow
def test_every_index_unreachable_venv_run_ends_in_seconds_with_exit_3(tmp_path: Path) -> None:
    if not shutil.which("uv"):
        pytest.skip("uv is not on PATH (pip install uv)")
    (tmp_path / "m.yaml").write_text(MATRIX)
    proc, elapsed = _offline(sys.executable, "-m", "repromatrix.cli", "run", "--matrix", "m.yaml",
                             "--all", "--backend", "venv", cwd=tmp_path)
    _assert_names_the_pytorch_index(proc, elapsed)
    said = proc.stdout + proc.stderr
    assert "pypi.nvidia.com" in said and "left out of the installs" in said
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").rglob("*.jsonl"))


@pytest.mark.docker
def test_every_index_unreachable_docker_run_ends_in_seconds_with_exit_3(
        tmp_path: Path, local_base_image: str) -> None:
    (tmp_path / "m.yaml").write_text(MATRIX)
    proc, elapsed = _offline(sys.executable, "-m", "repromatrix.cli", "matrix", "--matrix", "m.yaml",
                             "--all", "--base-image", f"python:3.11-slim={local_base_image}",
                             cwd=tmp_path)
    _assert_names_the_pytorch_index(proc, elapsed)
    assert "pypi.nvidia.com:443: DNS" in proc.stderr  # pip in a build would retry it: required
    assert not (tmp_path / "site").exists()


@pytest.mark.slow
def test_nox_passes_repromatrix_exit_code_through(tmp_path: Path) -> None:
    if not shutil.which("uv"):
        pytest.skip("uv is not on PATH (pip install uv)")
    nox = shutil.which("nox") or str(Path(sys.executable).parent / "nox")
    if not Path(nox).exists():
        pytest.skip("nox is not installed (pip install nox)")
    (tmp_path / "m.yaml").write_text(MATRIX)
    proc, elapsed = _offline(nox, "-f", str(ROOT / "noxfile.py"), "--no-venv", "-s", "matrix", "--",
                             "--matrix", str(tmp_path / "m.yaml"), "--all", "--backend", "venv",
                             "--results", str(tmp_path / "results"), cwd=tmp_path)
    _assert_names_the_pytorch_index(proc, elapsed)
    assert "repromatrix exited 3 (infrastructure unavailable)" in proc.stdout + proc.stderr



def test_a_ca_bundle_that_is_no_pem_is_bad_input(tmp_path: Path) -> None:
    from repromatrix.errors import UsageError

    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    with pytest.raises(UsageError, match=f"CA bundle {bad}: not a readable PEM bundle"):
        check_indexes([PYPI], Settings(ca_bundle=str(bad)), where="here", timeout=1.0)
