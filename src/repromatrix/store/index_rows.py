"""The store index's rows as named types: what each table's row holds, by name.

Flow: store.index_db (the tables) -> **store.index_rows** -> store.index_files,
store.index_histories, store.index. Each type lists its columns in the order of its
``SELECT`` (``cols``), so a row is read as ``Type(*row)`` and used by field name.
"""
from __future__ import annotations

from typing import NamedTuple


class FileRow(NamedTuple):
    """An indexed file (``files``): its id and path, its size and mtime when last read, how
    far it was read (byte offset, lines) and a hash of the bytes before that offset."""

    id: int
    path: str
    size: int | None
    mtime_ns: int | None
    offset: int | None
    lines: int | None
    tail: str | None

    @staticmethod
    def cols() -> str:
        return "id, path, size, mtime_ns, offset, lines, tail"


class RecordRow(NamedTuple):
    """One record line as ``records`` holds it (all but its row id)."""

    file: int
    line: int
    offset: int
    length: int
    run_id: str
    cell: str
    attempt: int
    stack_id: str
    repro: str
    status: str
    cache_key: str | None
    started_at: str
    finished_at: str
    signature: str | None
    workaround: str | None
    digest: str
    upgraded: int
    evidence: str
    kind: str  # the stack's kind (pip, ngc, local)
    gpu: int  # its environment probe saw a CUDA GPU (rules.verdict.on_gpu)
    torch: str | None  # each of rules.versions.RECORD_PACKAGES, local part dropped
    torchvision: str | None
    torch_tensorrt: str | None
    ngc: str | None
    python: str | None
    onnxscript: str | None
    onnxruntime: str | None
    copy: int = 0  # its cell's history dropped it as a copy of another record

    @staticmethod
    def cols() -> str:
        return ", ".join(RecordRow._fields)


class CellKey(NamedTuple):
    """A cell's latest record, key fields only: enough to decide whether it must run again.

    (A named tuple, not a dataclass: ``keys()`` makes one per cell, 100k at a time.)
    """

    cell: str
    stack_id: str
    repro: str
    status: str
    cache_key: str | None
    run_id: str
    finished_at: str
    signature: str | None = None
    workaround: str | None = None
    digest: str = ""  # a hash of the record's line: the same digest, the same record

    @staticmethod
    def cols(prefix: str = "") -> str:
        return ", ".join(prefix + name for name in CellKey._fields)


class Where(NamedTuple):
    """Where an indexed record line is: file id, byte offset and length, line number, digest,
    and whether it was written under an older schema (upgraded when read)."""

    file: int
    offset: int
    length: int
    line: int
    digest: str
    upgraded: bool


class Block(NamedTuple):
    """One indexed file (``StoreIndex.blocks``): its id and path, the lines read, how many
    of them are records, a digest of their digests in line order (``StoreIndex.chain``),
    where its last record is (None: it holds none), and how many records are in an older
    schema, and how many are copies of another record (left out of what is read). ``lines ==
    count`` and none older or a copy: the file is exactly its records."""

    file: int
    path: str
    lines: int
    count: int
    chain: str
    last: Where | None
    older: int
    copies: int = 0
