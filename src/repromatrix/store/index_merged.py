"""A temporary index over several stores and files given on their own, read as one store is.

Flow: result folders and files -> **store.index_merged** -> report.load. ``report --results A
B C`` (shards merged), or a file named on its own, is read the way one store is read
(``StoreIndex.histories``): a ``MergedIndex`` in a temporary folder indexes every file the
arguments name, in their order (``store.lines.iter_result_files``), each named as a
reader of its folder names it, and settles each cell's records across all of them
(``store.reader.settle_cell``: copies once, conflicts within a run and between stores). It
is removed on ``close``.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .index import StoreIndex
from .index_db import INDEX_NAME
from .index_histories import root_of
from .lines import Skipped, iter_result_files, walk_jsonl


class MergedIndex(StoreIndex):
    """The index of ``files`` (name -> the store folder it was found in, None for a file given
    on its own), in a temporary folder; files keep their order (their ids)."""

    def __init__(self, files: dict[str, Path | None]) -> None:
        tmp = tempfile.mkdtemp(prefix="repromatrix-index-")
        try:
            super().__init__(Path(os.curdir), Path(tmp) / INDEX_NAME)
        except BaseException:
            os.rmdir(tmp)
            raise
        self._tmp = tmp
        self.prefix = ""  # a file's path in ``files`` is its name
        self._by_id = True
        self._origins = files

    @classmethod
    def over(cls, paths: Iterable[Path | str]) -> tuple[MergedIndex, list[Skipped]]:
        """The index of every result file under ``paths`` (refreshed), and the paths that do
        not exist. A file inside a folder also given is named as that folder's reader names
        it, wherever it appears among ``paths``."""
        paths = list(paths)
        files, missing = iter_result_files(paths)
        covered: dict[Path, tuple[str, Path]] = {}
        for p in paths:
            if Path(p).is_dir():
                prefix = root_of(Path(p))  # as its own index names its files
                for f in walk_jsonl(Path(p)):
                    covered.setdefault(f.resolve(),
                                       (prefix + f.relative_to(p).as_posix(), Path(p)))
        found = {}
        for f in files:
            name, origin = covered.get(f.resolve(), (str(f), None))
            found[name] = origin
        index = cls(found)
        try:
            index.refresh()
        except BaseException:
            index.close()
            raise
        return index, missing

    def _found(self) -> dict[str, os.stat_result]:
        out: dict[str, os.stat_result] = {}
        for name in self._origins:
            try:
                out[name] = os.stat(name)
            except OSError:
                continue
        return out

    def origin(self, name: str) -> Path | None:
        return self._origins.get(name)
