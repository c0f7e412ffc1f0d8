"""Reading records of older schema versions: each version's upgrade to the next, in order."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """v2 added ``attempt`` (repeated runs of one cell) and made every stage carry a role."""
    data["attempt"] = 1
    for stage in data.get("stages") or []:
        if isinstance(stage, dict):
            stage.setdefault("role", "main")
    return data


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """v3 made every stage list what was stood in while it ran: nothing, before the lane."""
    for stage in data.get("stages") or []:
        if isinstance(stage, dict):
            stage.setdefault("standins", [])
    return data


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2, 2: _v2_to_v3}


def migrate(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` upgraded to SCHEMA_VERSION (a copy); unknown versions are left for _problem."""
    data = dict(raw)
    version = data.get("schema_version")
    while isinstance(version, int) and not isinstance(version, bool) and version in MIGRATIONS:
        data = MIGRATIONS[version](data)
        version = data["schema_version"] = version + 1
    return data
