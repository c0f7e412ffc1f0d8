"""Fixtures of the engines' tests."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def registry(tmp_path: Path) -> Any:
    """A real registry (Debian's docker-registry) on 127.0.0.1, no auth, storage in tmp."""
    import shutil as sh
    import socket
    import subprocess
    import urllib.request

    exe = sh.which("docker-registry")
    if not exe:
        pytest.skip("docker-registry is not installed (apt-get install docker-registry)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = tmp_path / "registry.yml"
    conf.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {tmp_path / 'blobs'}\n"
                    f"  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n")
    proc = subprocess.Popen([exe, "serve", str(conf)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v2/"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            break
        except OSError:
            assert time.monotonic() < deadline and proc.poll() is None, "the registry did not start"
            time.sleep(0.2)
    yield f"127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)
