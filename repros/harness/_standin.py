"""Stand-ins for TensorRT, so that torch-tensorrt's own Python code runs without a GPU.

Not a repro (the name starts with '_'). Two halves, standard library only, Python 3.8+:

**Making** (``python _standin.py make DIR``, run by the engine with the
environment's own interpreter when the environment is made, after
torch-tensorrt's wheel was installed ``--no-deps``): writes into ``DIR``

- ``python/tensorrt/``: a module that only satisfies imports: every attribute is
  an inert placeholder, ``__version__`` is the TensorRT version torch-tensorrt
  was built for, ``__standin__`` is True;
- ``lib/libnvinfer.so.N`` and ``lib/libnvinfer_plugin.so.N`` (N read from
  ``libtorchtrt.so``'s needed libraries), compiled with ``cc`` from ``nvinfer.c``:
  the four TensorRT symbols ``libtorchtrt.so`` links against, returning null;
- ``lib/libcudart_device0.so`` (``cudaGetDevice`` says 0), preloaded only where
  torch-tensorrt asks the CUDA runtime for the current device itself (2.2);
- ``lib/libtorchtrt_missing.so``: symbols ``libtorchtrt.so`` needs and the
  installed torch lacks (torch-tensorrt 2.3.0's PyPI wheel, pytorch/TensorRT#3031),
  each aborting the process loudly if it is ever called;
- ``standins.json``: the manifest (what was made and why).

What they are made from are real files in ``standin_sources/`` (the ``tensorrt`` module
and the C sources), copied and compiled with only data filled in (the TensorRT version
in a JSON file beside the module; the missing symbols as a ``-D`` define).

Nothing is made where a real ``tensorrt`` imports (the manifest says so).

**Using** (in a stage that opted in: ``r.stage(..., standins=["tensorrt"])``, always
isolated): the parent adds ``child_env()`` to the stage's child process; the
child calls ``activate()`` (current CUDA device 0, torch <= 2.3's lazy CUDA init
skipped, ``torch.device(<int>)`` as ``cuda:<int>`` where torch refuses it without
a GPU, compute capability 8.0 where torch-tensorrt asks at import). ``stop_at``
turns the first call into native TensorRT territory into a
``Reached`` exception, so a stage proves how far torch-tensorrt's code ran and
ends ``skip`` ("needs real TensorRT") past that point, never ``pass``; it keeps what
torch-tensorrt passed to that call (and what the real call returned), for a stage to decide on.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

ENV = "REPROMATRIX_STANDINS"  # the stand-in folder of this environment (set by the engine)
MANIFEST = "standins.json"
KNOWN = ("tensorrt",)
MISSING_SYMBOL_ROUNDS = 16
CAPABILITY = (8, 0)  # the stood-in GPU's compute capability: neither a Tegra nor a Thor

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "standin_sources")  # what the stand-ins are made from, real files
TENSORRT_MODULE = "tensorrt.py"  # written as tensorrt/__init__.py, its version beside it
NVINFER_C = "nvinfer.c"
CUDART_DEVICE0_C = "cudart_device0.c"
MISSING_SYMBOLS_C = "missing_symbols.c"  # the symbols come as -DSTANDIN_MISSING_SYMBOLS=...


# ------------------------------------------------------------------ making

def sources_sha256() -> str:
    """What the stand-ins are made from: this file and ``standin_sources/`` (the same sum
    as the host's ``engines.standins.source_sha256``, part of the fingerprint)."""
    h = hashlib.sha256()
    files = [os.path.basename(__file__)] + ["standin_sources/" + n for n in sorted(os.listdir(SOURCES))
                                            if os.path.isfile(source(n))]
    for name in files:
        with open(os.path.join(HERE, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()


def source(name: str) -> str:
    """The path of one stand-in source (``standin_sources/<name>``)."""
    return os.path.join(SOURCES, name)


def _torch_tensorrt_dir() -> Optional[str]:
    import importlib.util

    spec = importlib.util.find_spec("torch_tensorrt")
    return os.path.dirname(spec.origin) if spec and spec.origin else None


def _real_tensorrt() -> Optional[str]:
    """The version of a real TensorRT that imports here, else None."""
    try:
        import tensorrt  # noqa: F401
    except Exception:
        return None
    if getattr(tensorrt, "__standin__", False):
        return None
    return str(getattr(tensorrt, "__version__", "unknown"))


def _needed_majors(lib: str) -> Dict[str, str]:
    """{'libnvinfer': '10', 'libnvinfer_plugin': '10'} from libtorchtrt.so's needed libraries."""
    with open(lib, "rb") as f:
        data = f.read()
    found = {}
    for m in re.finditer(rb"(libnvinfer(?:_plugin)?)\.so\.(\d+)\x00", data):
        found[m.group(1).decode()] = m.group(2).decode()
    return found


def _tensorrt_version(pkg: str) -> str:
    """The TensorRT version this torch-tensorrt was built for (its _version.py)."""
    try:
        with open(os.path.join(pkg, "_version.py")) as f:
            m = re.search(r"__tensorrt_version__\s*=\s*['\"]([^'\"]+)", f.read())
        return m.group(1) if m else "unknown"
    except OSError:
        return "unknown"


def _compile(cc: str, src: str, out: str, soname: str, log: List[str],
             defines: Sequence[str] = ()) -> None:
    """Compile the C source file ``src`` into the shared library ``out`` (``defines``: -D
    values, the only data a source gets)."""
    cmd = [cc, "-shared", "-fPIC", "-O1", "-Wl,-soname," + soname,
           *["-D" + d for d in defines], "-o", out, src]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    log.append(" ".join(cmd))
    if proc.returncode != 0:
        raise RuntimeError("stand-in compile failed: %s\n%s" % (" ".join(cmd),
                                                                proc.stdout.decode("utf-8", "replace")))


def _missing_symbols(lib: str, env: Dict[str, str]) -> List[str]:
    """Symbols that keep ``lib`` from loading next to this torch (empty when it loads)."""
    code = "import torch, ctypes, sys; ctypes.CDLL(sys.argv[1])"
    proc = subprocess.run([sys.executable, "-c", code, lib], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=env)
    text = proc.stdout.decode("utf-8", "replace")
    return re.findall(r"undefined symbol: (\w+)", text) if proc.returncode else []


def make(dest: str, cc: str = "cc") -> Dict[str, Any]:
    """Make the stand-ins for this interpreter's torch-tensorrt in ``dest``; the manifest."""
    os.makedirs(dest, exist_ok=True)
    manifest: Dict[str, Any] = {"sources_sha256": sources_sha256(), "standins": [], "log": []}
    real = _real_tensorrt()
    pkg = _torch_tensorrt_dir()
    if real or not pkg:
        manifest["not_made"] = ("a real TensorRT %s imports here" % real) if real \
            else "torch_tensorrt is not installed"
        return _write_manifest(dest, manifest)
    lib = os.path.join(pkg, "lib", "libtorchtrt.so")
    majors = _needed_majors(lib)
    version = _tensorrt_version(pkg)
    pydir, libdir = os.path.join(dest, "python", "tensorrt"), os.path.join(dest, "lib")
    os.makedirs(pydir, exist_ok=True)
    os.makedirs(libdir, exist_ok=True)
    shutil.copyfile(source(TENSORRT_MODULE), os.path.join(pydir, "__init__.py"))
    with open(os.path.join(pydir, "standin.json"), "w") as f:
        json.dump({"version": version}, f)
    for name, major in sorted(majors.items()):
        soname = "%s.so.%s" % (name, major)
        _compile(cc, source(NVINFER_C), os.path.join(libdir, soname), soname, manifest["log"])
    manifest.update({"tensorrt_version": version, "nvinfer": majors, "standins": ["tensorrt"]})
    with open(os.path.join(pkg, "_Device.py")) as f:
        if "_get_current_device" in f.read():  # 2.2: asks the CUDA runtime itself
            _compile(cc, source(CUDART_DEVICE0_C), os.path.join(libdir, "libcudart_device0.so"),
                     "libcudart_device0.so", manifest["log"])
            manifest["preload"] = ["libcudart_device0.so"]
    env = dict(os.environ, LD_LIBRARY_PATH=_join_path(libdir, os.environ.get("LD_LIBRARY_PATH")))
    missing: List[str] = []
    for _ in range(MISSING_SYMBOL_ROUNDS):
        new = [s for s in _missing_symbols(lib, env) if s not in missing]
        if not new:
            break
        missing += new
        _compile(cc, source(MISSING_SYMBOLS_C), os.path.join(libdir, "libtorchtrt_missing.so"),
                 "libtorchtrt_missing.so", manifest["log"],
                 ["STANDIN_MISSING_SYMBOLS=" + " ".join("MISSING(%s)" % s for s in missing)])
        manifest["preload"] = sorted(set(manifest.get("preload", [])) | {"libtorchtrt_missing.so"})
        env["LD_PRELOAD"] = os.path.join(libdir, "libtorchtrt_missing.so")
    if missing:
        manifest["missing_symbols"] = missing
        manifest["standins"].append("libtorchtrt-missing-symbols")
    return _write_manifest(dest, manifest)


def _write_manifest(dest: str, manifest: Dict[str, Any]) -> Dict[str, Any]:
    with open(os.path.join(dest, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    return manifest


def _join_path(first: str, rest: Optional[str]) -> str:
    return first + (os.pathsep + rest if rest else "")


def dependencies() -> List[str]:
    """torch-tensorrt's own requirements minus TensorRT and torch (installed by the stack)."""
    from importlib import metadata

    out = []
    for req in metadata.requires("torch_tensorrt") or metadata.requires("torch-tensorrt") or []:
        name = re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0].lower().replace("_", "-")
        if ";" in req and "extra" in req.split(";", 1)[1]:
            continue
        if name.startswith("tensorrt") or name in ("torch", "torchvision"):
            continue
        out.append(req.split(";", 1)[0].strip())
    return out


# ------------------------------------------------------------------- using

def manifest() -> Optional[Dict[str, Any]]:
    """This environment's stand-in manifest (None when the engine made none)."""
    folder = os.environ.get(ENV)
    if not folder:
        return None
    try:
        with open(os.path.join(folder, MANIFEST)) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    data["folder"] = folder
    return data


def missing_reason(names: List[str]) -> Optional[str]:
    """Why a stage that opted into ``names`` cannot run on stand-ins here (None: it can)."""
    unknown = [n for n in names if n not in KNOWN]
    if unknown:
        raise ValueError("unknown stand-in(s) %s (known: %s)" % (unknown, ", ".join(KNOWN)))
    m = manifest()
    if m is None:
        real = _real_tensorrt()
        return ("TensorRT is real here (%s): the stages on real TensorRT decide" % real) if real \
            else "no TensorRT stand-ins in this environment (run with --standin tensorrt)"
    if m.get("not_made"):
        return "stand-ins not made: %s" % m["not_made"]
    lacking = [n for n in names if n not in m.get("standins", [])]
    return "stand-ins lacking: %s" % ", ".join(lacking) if lacking else None


def child_env(base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment of a stand-in stage's child process."""
    env = dict(os.environ if base is None else base)
    m = manifest() or {}
    folder = m.get("folder", "")
    libdir = os.path.join(folder, "lib")
    env["LD_LIBRARY_PATH"] = _join_path(libdir, env.get("LD_LIBRARY_PATH"))
    env["PYTHONPATH"] = _join_path(os.path.join(folder, "python"), env.get("PYTHONPATH"))
    preload = [os.path.join(libdir, n) for n in m.get("preload", [])]
    if preload:
        env["LD_PRELOAD"] = " ".join(preload + [p for p in [env.get("LD_PRELOAD")] if p])
    env["REPROMATRIX_STANDIN_ACTIVE"] = "1"
    return env


def activate() -> List[str]:
    """In a stand-in stage's child: what torch-tensorrt needs of a GPU, stood in. Returns
    what was stood in (the stage record's ``standins``)."""
    import torch

    done = list((manifest() or {}).get("standins", []))
    torch.cuda.current_device = lambda: 0
    done.append("cuda-current-device-0")
    if _release(torch.__version__) < (2, 4):
        torch.cuda._lazy_init = lambda: None  # fake cuda tensors need it skipped on <= 2.3
        done.append("cuda-lazy-init")
    try:
        torch.cuda.get_device_capability()
    except Exception:  # torch-tensorrt >= 2.10 asks at import (is it a Thor or a Tegra?)
        torch.cuda.get_device_capability = lambda device=None: CAPABILITY
        done.append("cuda-device-capability-%d.%d" % CAPABILITY)
    try:
        torch.device(0)
    except RuntimeError:
        torch.device = _int_device_type(torch.device)
        done.append("torch.device(int)")
    return done


def _int_device_type(real: Any) -> Any:
    """``torch.device`` that reads a bare int as ``cuda:<int>`` (torch 2.5 refuses it
    without an accelerator); instance checks still see the real type."""

    class _DeviceType(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real)

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            if len(args) == 1 and isinstance(args[0], int) and not isinstance(args[0], bool):
                return real("cuda", args[0])
            return real(*args, **kwargs)

    return _DeviceType("device", (), {"__module__": "torch"})


def _release(version: str) -> tuple:
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def import_torch_tensorrt(s: Any) -> Any:
    """torch_tensorrt, imported on the stand-ins (checked: its ``tensorrt`` is one)."""
    import torch_tensorrt  # noqa: I001 - first, as a user's code would: it imports tensorrt itself
    import tensorrt

    s.note("torch_tensorrt", torch_tensorrt.__version__)
    s.note("tensorrt_standin", {"version": tensorrt.__version__,
                                "file": getattr(tensorrt, "__file__", "")})
    s.check(getattr(tensorrt, "__standin__", False), "torch_tensorrt imported on the TensorRT stand-in")
    return torch_tensorrt


class Reached(Exception):
    """A stand-in stage ran as far as ``point``: beyond it only real TensorRT can go."""

    def __init__(self, point: str) -> None:
        Exception.__init__(self, point)
        self.point = point


@contextlib.contextmanager
def stop_at(owner: Any, attribute: str, label: str = "", run_first: bool = False,
            decide: Optional[Callable[[Dict[str, Any]], None]] = None) -> Iterator[Dict[str, Any]]:
    """Replace ``owner.attribute`` by a call that raises ``Reached`` while the block runs;
    the yielded dict gets ``reached`` (the point) when the block was stopped there, and
    ``args`` and ``kwargs``: what torch-tensorrt passed to that call.
    ``run_first``: the original runs first (its value kept as ``value``), then the stop:
    the point is "after" that call.
    ``decide``: called with the dict inside the call, before the stop; what it raises goes
    up through torch-tensorrt's caller, so a signature's ``frame`` names the call site
    (a stage decides on what was passed or returned, not only on an exception)."""
    original = getattr(owner, attribute)
    point = label or "%s.%s" % (getattr(owner, "__name__", type(owner).__name__), attribute)
    state: Dict[str, Any] = {}

    def tripwire(*args: Any, **kwargs: Any) -> Any:
        state["args"], state["kwargs"] = args, kwargs
        if run_first:
            state["value"] = original(*args, **kwargs)
        if decide is not None:
            decide(state)
        raise Reached(point)

    setattr(owner, attribute, tripwire)
    try:
        yield state
    except Reached as e:
        state["reached"] = e.point
    finally:
        setattr(owner, attribute, original)


def past(s: Any, state: Dict[str, Any], cleared: str) -> None:
    """End a stand-in stage that ran clean past ``cleared`` (where the bug would be): a
    ``skip``, since what follows needs real TensorRT. A block that was not stopped at its
    tripwire is a failed check (the stand-ins let something run that should not have)."""
    s.check("reached" in state, "torch-tensorrt's code ran until it needed real TensorRT",
            stopped_at=state.get("reached"))
    s.note("cleared", cleared)
    s.note("stopped_at", state["reached"])
    s.skip("needs real TensorRT: torch-tensorrt's code ran clean through %s, then stopped at %s"
           % (cleared, state["reached"]))


def main(argv: List[str]) -> int:
    if len(argv) >= 2 and argv[0] == "make":
        cc = argv[2] if len(argv) > 2 else os.environ.get("CC", "cc")
        out = make(argv[1], cc)
        print(json.dumps(out, indent=1, sort_keys=True))
        return 0
    if argv[:1] == ["deps"] and len(argv) == 2:
        with open(argv[1], "w") as f:
            f.write("".join(d + "\n" for d in dependencies()))
        print("torch-tensorrt's requirements besides TensorRT and torch: %s"
              % (", ".join(dependencies()) or "none"))
        return 0
    sys.stderr.write("usage: _standin.py make DIR [CC] | deps FILE\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
