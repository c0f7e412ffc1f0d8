"""Rows people can scan: stacks labelled, grouped by axis and ordered by version.

Flow: report -> **report.stacks**. A stack's short label reads like
``torch 2.4.1 · trt 2.4.0 · cu124`` (NGC: ``NGC 24.05 · torch 2.4.0 · trt 2.4.0``);
the full label names every version. Rows are grouped by torch minor (pip and
local stacks) and by NGC year, each group in version order; ``rank`` is a
stack's place in plain version order (torch, torch-tensorrt, NGC), which is
what "newest" means when the page suggests a stack.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from packaging.version import Version

from repromatrix.model import ONNX_PACKAGES, Repro
from repromatrix.rules.versions import normalize_version, probe_version
from repromatrix.store.lines import dumps
from repromatrix.store.record import Result

from .answers import stack_scope
from .fold import row_fold

VERSION_KEYS = ("torch", "torch_tensorrt", "ngc")
LABEL_KEYS = (("torch", "torch"), ("torchvision", "tv"), ("torch_tensorrt", "trt"),
              ("tensorrt", "TensorRT"), ("ngc", "ngc"), ("python", "py"), ("cuda", "cuda"),
              ("onnxscript", "osc"), ("onnxruntime", "ort"))
_CUDA_LOCAL = re.compile(r"\+(cu\d+|cpu|rocm[\d.]+)$")


def stack_versions(rec: Result) -> dict[str, str]:
    """Display versions of a record's stack: spec pins, else the probe."""
    out = {}
    for key, _ in LABEL_KEYS:
        if key in ONNX_PACKAGES and not probe_version(None, rec.stack, key):  # shown where pinned
            continue
        value = probe_version(None, rec.stack, key) or probe_version(rec.env, None, key)
        if value:
            out[key] = value
    return out


def pairing_note(versions: Mapping[str, str], known: dict[tuple[str, str], str]) -> str:
    """How far the stack's torch/torchvision pair can be trusted (``config.compat``'s
    ``pairing_note``), from ``known`` (pair -> note, see ``known_pairings``) where it holds
    the pair, else worked out and added to it. The compatibility table is read only then:
    importing it costs more than a render after one new record."""
    pair = (_plain(versions.get("torch", "")), _plain(versions.get("torchvision", "")))
    if pair not in known:
        from repromatrix.config.compat import pairing_note as note

        known[pair] = note(*pair)
    return known[pair]


def known_pairings(stacks: Iterable[Sequence[Any]]) -> dict[tuple[str, str], str]:
    """The pairing note of each torch/torchvision pair in ``stacks`` (``Head.stack`` lists
    whose pieces were made with the compatibility table of today: the pieces' key holds it)."""
    return {(_plain(versions.get("torch", "")), _plain(versions.get("torchvision", ""))): note
            for _, _, versions, _, _, note in stacks}


def _plain(version: str) -> str:
    return version.split("+", 1)[0]


def short_label(kind: str, versions: Mapping[str, str]) -> str:
    """``torch 2.4.1 · trt 2.4.0 · cu124``: what tells stacks apart at a glance."""
    parts = [f"NGC {versions['ngc']}"] if kind == "ngc" and versions.get("ngc") else []
    if versions.get("torch"):
        parts.append(f"torch {_plain(versions['torch'])}")
    if versions.get("torch_tensorrt"):
        parts.append(f"trt {_plain(versions['torch_tensorrt'])}")
    cuda = versions.get("cuda")
    local = _CUDA_LOCAL.search(versions.get("torch", ""))
    if cuda and re.match(r"^\d+\.\d+", cuda):
        parts.append("cu" + "".join(cuda.split(".")[:2]))
    elif local:
        parts.append(local.group(1))
    return " · ".join(parts)


def stack_group(kind: str, versions: Mapping[str, str]) -> tuple[tuple[Any, ...], str]:
    """(sort key, label) of a stack's row group: NGC year, else torch minor, else other."""
    ngc = versions.get("ngc", "")
    if kind == "ngc" and re.match(r"^\d{2}\.\d{2}", ngc):
        return (1, int(ngc[:2])), f"NGC 20{ngc[:2]}"
    torch = _version(versions.get("torch"))
    if torch is not None:
        minor = (torch.major, torch.minor)
        return (0, minor), f"torch {minor[0]}.{minor[1]}"
    return (2,), "other"


class StackBook:
    """The stacks seen while the records stream past: each from its latest-finished record."""

    def __init__(self, published: Collection[str] | None = None) -> None:
        self.published = published
        self.stacks: dict[str, dict[str, Any]] = {}

    def add(self, stack_id: str, kind: str, versions: dict[str, str], finished_at: str,
            spec: Mapping[str, Any], pairing: str) -> None:
        """A cell's stack: its versions (``stack_versions``), the stack fields its scope
        reads (``answers.stack_scope``) and its ``pairing_note``, as of the cell's record."""
        found = self.stacks.get(stack_id)
        if found is None or finished_at > found["_finished"]:
            self.stacks[stack_id] = {
                "id": stack_id, "kind": kind, "versions": versions, "_finished": finished_at,
                "scope": stack_scope(spec, self.published), "pairing": pairing}

    def ordered(self) -> list[dict[str, Any]]:
        """Grouped and in version order; each with labels, group, scope and rank."""
        for st in self.stacks.values():
            versions = st["versions"]
            st["full_label"] = " · ".join(f"{short} {versions[k]}" for k, short in LABEL_KEYS
                                          if k in versions)
            st["label"] = short_label(st["kind"], versions)
            if st["pairing"]:
                st["full_label"] += f" · {st['pairing']}"
            st["group_key"], st["group"] = stack_group(st["kind"], versions)
        keys = {st["id"]: stack_sort_key(st) for st in self.stacks.values()}
        for rank, st in enumerate(sorted(self.stacks.values(), key=lambda s: keys[s["id"]])):
            st["rank"] = rank
        return sorted(self.stacks.values(), key=lambda s: (s["group_key"], keys[s["id"]]))


def _version(text: str | None) -> Version | None:
    return normalize_version(text)


def stack_sort_key(stack: Mapping[str, Any]) -> tuple:
    """Versions compared as versions (2.10 after 2.9); unknown versions first."""
    key: list[Any] = []
    for name in VERSION_KEYS:
        version = _version(stack["versions"].get(name))
        key.append((0, Version("0")) if version is None else (1, version))
    key.append(stack["id"])
    return tuple(key)


def layout_key(cells: Mapping[str, Mapping[str, Any]], stack_ids: list[str],
               repro_ids: list[str]) -> str:
    """A digest of everything ``pivot`` decides by: the rows, the columns, each cell's place,
    and, only where two cells share a place, when each finished (a new run of a cell leaves
    the key as it was)."""
    places: dict[tuple[str, str], int] = {}
    for c in cells.values():
        place = (c["stack"], c["repro"])
        places[place] = places.get(place, 0) + 1
    return hashlib.sha1(dumps([stack_ids, repro_ids, [
        (c["stack"], c["repro"], c["id"],
         c["finished_at"] if places[(c["stack"], c["repro"])] > 1 else "")
        for c in cells.values()]])).hexdigest()


def pivot(cells: Mapping[str, Mapping[str, Any]], stack_ids: list[str],
          repro_ids: list[str]) -> list[list[str]]:
    """stack x repro grid of cell ids ('' where a cell has no result), one list per stack:
    the cell that finished last where two share a place."""
    import pandas as pd  # only when the grid changed (``layout_key``): its import is most of a render

    frame = pd.DataFrame([(c["stack"], c["repro"], c["id"], c["finished_at"])
                          for c in cells.values()],
                         columns=["stack", "repro", "cell", "finished"])
    if frame.empty:
        return [[""] * len(repro_ids) for _ in stack_ids]
    frame = frame.sort_values("finished", kind="stable").drop_duplicates(["stack", "repro"],
                                                                         keep="last")
    grid = frame.pivot(index="stack", columns="repro", values="cell")
    grid = grid.reindex(index=stack_ids, columns=repro_ids).astype(object).fillna("")
    return [list(row) for row in grid.itertuples(index=False, name=None)]


def matrix_rows(stacks: list[dict[str, Any]], grid: list[list[str]],
                cells: Mapping[str, Mapping[str, Any]], shown_scope: str,
                repros: Mapping[str, Repro]) -> list[dict[str, Any]]:
    """Rows for the matrix template: the stack, its cells (None where missing), whether it
    opens a group, whether the default scope hides it, and whether it folds (``report.fold``:
    every cell cannot tell)."""
    rows = []
    previous_group = None
    for stack, values in zip(stacks, grid, strict=True):
        row_cells = [cells[v] if v else None for v in values]
        present = [c["status"] for c in row_cells if c]
        rows.append({"stack": stack, "cells": row_cells,
                     "group_start": stack["group"] != previous_group,
                     "hidden": shown_scope != "all" and stack["scope"] != shown_scope,
                     "all_broken": bool(present) and set(present) == {"broken"},
                     "broken_message": next((c["message"] for c in row_cells if c), ""),
                     "fold": row_fold(row_cells, repros)})
        previous_group = stack["group"]
    return rows
