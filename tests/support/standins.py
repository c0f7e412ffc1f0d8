"""A torch-tensorrt package made for the tests: its native library links against TensorRT,
so it loads only with the stand-ins (``repros/harness/_standin.py``) or a real TensorRT."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from repromatrix.paths import harness_dir

sys.path.insert(0, str(harness_dir()))
import _standin  # noqa: E402


def fake_torch_tensorrt(root: Path, cc: str) -> Path:
    """A package named torch_tensorrt whose libtorchtrt.so links against TensorRT 10 and
    calls it, as the real wheel's does (built with the stand-in library to link against)."""
    pkg = root / "site" / "torch_tensorrt"
    (pkg / "lib").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_version.py").write_text('__version__ = "2.4.0"\n__tensorrt_version__ = "10.1.0"\n')
    (pkg / "_Device.py").write_text("import torch\n")
    link = root / "link"
    link.mkdir()
    for name in ("libnvinfer.so.10", "libnvinfer_plugin.so.10"):
        _standin._compile(cc, _standin.source(_standin.NVINFER_C), str(link / name), name, [])
    src = root / "trt.c"
    src.write_text(textwrap.dedent("""
        void *getPluginRegistry(void);
        int initLibNvInferPlugins(void *, const char *);
        int uses_tensorrt(void) { return getPluginRegistry() != 0 && initLibNvInferPlugins(0, ""); }
    """))
    subprocess.run([cc, "-shared", "-fPIC", "-Wl,--no-as-needed", "-o",
                    str(pkg / "lib" / "libtorchtrt.so"), str(src), str(link / "libnvinfer.so.10"),
                    str(link / "libnvinfer_plugin.so.10")], check=True)
    return pkg
