"""The venv engine's disk: environments and their uv cache kept within ``--env-budget``.

Run stage, venv side. Everything the venv engine writes lives under its root
(``venv.venv_root()``): one folder per environment and the uv cache it installs
from (``<root>/uv-cache``; uv hard-links from it, so an environment and the cache
share their files and usage counts each file once). Bisect builds its probes
here too.

- **in use**: an engine holds a shared lock on ``<key>.lock`` from ``prepare`` until
  ``release`` (a build holds it exclusively), so no run removes an environment
  another run is using, and this run never removes one it uses;
- **bounded**: after each release, finished environments are removed least recently
  used first (the cache emptied first, when no install is using it) until usage fits
  the budget; before a build, likewise until the free disk holds its estimate;
- **predicted**: before any build, the environments still to build are
  estimated (``estimate_bytes``: documented per-stack figures, not the index) and a
  run that cannot fit in the free disk, even after removing every environment
  not in use, is refused (exit 3) before it starts.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO

from repromatrix.errors import InfraError
from repromatrix.model import Stack

GB = 1e9
MARKER = "repromatrix-venv.json"
CACHE_DIR = "uv-cache"
CACHE_LOCK = "uv-cache.lock"
DEFAULT_SHARE_OF_FREE = 0.5
# Per-environment estimates (environment + its files in the uv cache, hard-linked):
# measured on torch 2.14.1 (CUDA wheels from PyPI: 5.8 GB), 2.13.0+cpu (0.9 GB).
ESTIMATE_GB = {"torch-cuda": 6.0, "torch-cpu": 1.0, "torch-tensorrt": 3.0, "other": 0.2}


class DiskTooSmall(InfraError):
    """The environments a run must build do not fit in the free disk (exit 3)."""


def estimate_bytes(stack: Stack) -> float:
    """What one stack's environment is expected to take (``ESTIMATE_GB``, documented in
    docs/running.md): a CUDA torch build unless the stack's index is ``cpu``, plus torch-tensorrt."""
    if not stack.torch:
        return ESTIMATE_GB["other"] * GB
    gb = ESTIMATE_GB["torch-cpu" if stack.index == "cpu" else "torch-cuda"]
    if stack.torch_tensorrt and stack.torch_tensorrt != "none":
        gb += ESTIMATE_GB["torch-tensorrt"]
    return gb * GB


def usage_bytes(root: Path) -> int:
    """Bytes on disk under ``root``, each hard-linked file counted once."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder, dirs, files in os.walk(root):
        for name in files + dirs:
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def free_bytes(root: Path) -> int:
    probe = root if root.exists() else next(p for p in root.parents if p.exists())
    return shutil.disk_usage(probe).free


def default_budget_bytes(root: Path) -> float:
    """Half of what the environments could have: their usage now plus the free disk."""
    used = usage_bytes(root) if root.is_dir() else 0
    return DEFAULT_SHARE_OF_FREE * (used + free_bytes(root))


class EnvDisk:
    """The environments under one root: holds, LRU removal, the budget."""

    def __init__(self, root: Path, budget_gb: float | None, log: Callable[[str], None]) -> None:
        self.root = root
        self.log = log
        self._budget = budget_gb * GB if budget_gb is not None else None
        self._held: dict[str, IO[str]] = {}
        self._reclaimable: float | None = None  # usage seen by the first check_fits of a run
        self._said_need = 0.0

    @property
    def budget(self) -> float:
        """--env-budget, or the default from the disk (measured once, when first needed: a
        run that builds nothing never walks the environments)."""
        if self._budget is None:
            self._budget = default_budget_bytes(self.root)
        return self._budget

    @property
    def cache(self) -> Path:
        return self.root / CACHE_DIR

    def lock_path(self, key: str) -> Path:
        return self.root / f"{key}.lock"

    def hold(self, key: str, lock: IO[str]) -> None:
        """Keep ``lock`` (the environment's lock file, held) shared until ``release``."""
        fcntl.flock(lock, fcntl.LOCK_SH)
        old = self._held.pop(key, None)
        if old is not None:
            old.close()
        self._held[key] = lock

    def release(self, key: str) -> None:
        lock = self._held.pop(key, None)
        if lock is not None:
            lock.close()
        self.touch(key)

    def close(self) -> None:
        for key in list(self._held):
            self.release(key)

    def touch(self, key: str) -> None:
        """Mark an environment used now (its marker's mtime orders the LRU)."""
        with contextlib.suppress(OSError):
            os.utime(self.root / key / MARKER)

    @contextlib.contextmanager
    def installing(self) -> Iterator[None]:
        """Hold the uv cache for an install (no one empties it meanwhile)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / CACHE_LOCK).open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_SH)
            yield

    def finished(self) -> list[Path]:
        """Finished environments, least recently used first."""
        envs = [p.parent for p in self.root.glob(f"*/{MARKER}")]
        return sorted(envs, key=lambda p: (p / MARKER).stat().st_mtime)

    def make_room(self, need: float = 0.0) -> None:
        """Remove what no run uses, oldest use first, until the environments fit the budget
        and, when ``need`` bytes are about to be built, the free disk holds them."""
        if not self.root.is_dir():
            return
        used = usage_bytes(self.root)

        def short() -> bool:
            return used > self.budget or free_bytes(self.root) < need

        if not short():
            return
        self._empty_cache()
        used = usage_bytes(self.root)
        for env in self.finished():
            if not short():
                return
            size = usage_bytes(env)  # its own files: the cache no longer shares them
            if env.name not in self._held and self._remove(env):
                used -= size
                self.log(f"removed environment {env} (least recently used; --env-budget "
                         f"{self.budget / GB:g} GB)")
        if used > self.budget:
            self.log(f"warning: environments in use take {used / GB:.2f} GB, over --env-budget "
                     f"{self.budget / GB:g} GB")

    def check_fits(self, to_build: Sequence[Stack]) -> None:
        """Refuse (DiskTooSmall) a run whose environments cannot fit, before it starts."""
        if not to_build:
            return
        sizes = [estimate_bytes(s) for s in to_build]
        need, largest = sum(sizes), max(sizes)
        peak = min(need, max(self.budget, largest))  # removal keeps the rest within the budget
        if self._reclaimable is None:  # preflight asks stack by stack: walk the folder once
            self._reclaimable = usage_bytes(self.root) if self.root.is_dir() else 0
        reclaim = self._reclaimable
        free = free_bytes(self.root)
        if need > self._said_need:  # said up front, once per run (preflight may ask per stack)
            self._said_need = need
            self.log(f"{len(to_build)} environment(s) to build under {self.root}: ~{need / GB:.1f} "
                     f"GB to download and store by the documented per-stack estimates "
                     f"(--env-budget {self.budget / GB:g} GB, {free / GB:.1f} GB free)")
        if largest > self.budget:
            self.log(f"warning: one environment (~{largest / GB:.1f} GB) is larger than --env-budget "
                     f"{self.budget / GB:g} GB: the budget is exceeded while it exists")
        if peak > free + reclaim:
            raise DiskTooSmall(
                f"not enough disk for the environments of this run: {len(to_build)} to build, "
                f"~{need / GB:.1f} GB by the documented per-stack estimates (CUDA torch "
                f"{ESTIMATE_GB['torch-cuda']:g} GB, CPU torch {ESTIMATE_GB['torch-cpu']:g} GB, "
                f"+{ESTIMATE_GB['torch-tensorrt']:g} GB with torch-tensorrt), at least "
                f"{peak / GB:.1f} GB at once; {free / GB:.1f} GB free under {self.root} "
                f"(+{reclaim / GB:.1f} GB of existing environments and cache). Free disk, point "
                "REPROMATRIX_VENV_DIR at a larger disk, or select fewer stacks (-k)")

    def _remove(self, env: Path) -> bool:
        """Remove a finished environment unless some run holds its lock; True if removed."""
        with self.lock_path(env.name).open("a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            (env / MARKER).unlink(missing_ok=True)  # never half-removed and taken for finished
            shutil.rmtree(env, ignore_errors=True)
        return True

    def _empty_cache(self) -> None:
        """Empty the uv cache unless an install is using it (environments keep their links)."""
        if not self.cache.is_dir():
            return
        with (self.root / CACHE_LOCK).open("a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            uv = shutil.which("uv") or "uv"
            subprocess.run([uv, "cache", "clean", "--cache-dir", str(self.cache)],
                           capture_output=True, stdin=subprocess.DEVNULL, check=False)
