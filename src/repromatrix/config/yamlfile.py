"""The one way the harness reads YAML (matrix.yaml, the compat table).

Safe loader only (the C one when PyYAML has it), strict UTF-8, a size limit
checked before parsing, and a limit on the size of the document once every
alias is expanded: a small file with nested aliases (a "billion laughs")
is refused before anything walks or prints it. Plain anchors and aliases
that repeat a few values stay allowed. Every failure is a ConfigError
naming the file (exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from repromatrix.errors import ConfigError

from .validate import read_regular, regular_file

LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_BYTES = 4 * 1024 * 1024
MAX_NODES = 100_000  # nodes in the document with every alias expanded


def read_yaml(path: Path | str) -> Any:
    """Read and parse a YAML file; ConfigError naming the file for any problem."""
    path = Path(path)
    try:
        size = regular_file(path, "give a YAML file").stat().st_size
        if size > MAX_BYTES:
            raise ConfigError(f"{size:,} bytes: too large for a YAML config "
                              f"(limit {MAX_BYTES:,} bytes)", file=str(path))
        data = read_regular(path, "give a YAML file")
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    return load_yaml(data, str(path))


def load_yaml(data: bytes, file: str) -> Any:
    """Parse YAML bytes (UTF-8) from ``file`` with the safe loader, within the limits."""
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{len(data):,} bytes: too large for a YAML config "
                          f"(limit {MAX_BYTES:,} bytes)", file=file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"line {line}: not UTF-8 (byte 0x{data[exc.start]:02x}); "
                          f"save the file as UTF-8", file=file) from None
    loader = LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node, file)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"line {mark.line + 1}: " if mark else ""
        raise ConfigError(f"{line}malformed YAML: {exc.problem or exc.context}", file=file) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"malformed YAML: {str(exc)[:300]}", file=file) from None
    except RecursionError:
        raise ConfigError("malformed YAML: nested too deeply", file=file) from None
    finally:
        loader.dispose()


def _check_expanded_size(root: yaml.Node, file: str) -> None:
    """Refuse a document whose alias-expanded size exceeds MAX_NODES, or that
    refers to itself. Shared nodes (aliases) are counted once per use, but each
    node is visited once, so a bomb is measured without being expanded."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            active.discard(key)
            if sizes[key] > MAX_NODES:
                mark = node.start_mark
                raise ConfigError(f"line {mark.line + 1}: this value expands to more than "
                                  f"{MAX_NODES:,} items (aliases nested in aliases?); "
                                  f"write it out or simplify it", file=file)
            continue
        if key in sizes:
            continue
        if key in active:
            raise ConfigError(f"line {node.start_mark.line + 1}: an alias refers to a value "
                              f"that contains it (a recursive structure)", file=file)
        active.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []
