"""A record as a dict, for tests of the store and the shards."""

from __future__ import annotations

from repromatrix.store.record import SCHEMA_VERSION


def make_record(**over):
    """A `fail` record of one cell, with ``over`` replacing its fields."""
    stack = over.pop("stack", "pip-t2.4.1")
    repro = over.pop("repro", "deform_conv2d_device")
    rec = {
        "schema_version": SCHEMA_VERSION, "run_id": "run-1", "cell": f"{stack}--{repro}",
        "stack": {"id": stack, "kind": "pip", "torch": "2.4.1"}, "repro": repro,
        "status": "fail", "stages": [], "signature": None, "message": "boom",
        "traceback": "", "duration_s": 1.0, "exit_code": 1, "signal": None, "env": {},
        "image": None, "backend": "docker", "harness_version": "0", "host": "box",
        "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:00:01Z",
    }
    rec.update(over)
    return rec
