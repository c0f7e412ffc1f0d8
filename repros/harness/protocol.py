"""The repro protocol: stages, signatures, requirements, checks, result file.

Container side of the flow (matrix -> plan -> images -> run -> results ->
report): every repro script in ``repros/`` builds its verdict through this
module, and ``runner.py`` reads what it writes. Standard library only (torch
is only touched through the objects a repro hands in), Python 3.8+.

This module is the protocol's public face: it holds the entry point (``main``) and
re-exports the names a repro uses from the modules beside it, each holding one part:
``_signatures.py`` (``Signature``, exception matching), ``_requirements.py``
(``requirement_reason``), ``_stages.py`` (``Stage``: evidence, checks, ``Skip``),
``_repro.py`` (``Repro``: running stages, the result file), ``_outcome.py`` (the
verdict rules) and ``_versions.py`` (installed versions, version specifiers).

A repro is a sequence of named **stages**. Each stage runs a function and
ends ``pass`` (completed, every check held), ``fail`` (an exception matched
one of the repro's **signatures**: the known bug), ``error`` (an exception
that matches none: something new), or ``skip`` (a requirement is missing,
with the reason). Stages have a role:

- ``main``: the user's workflow; the cell's verdict is derived from these;
- ``workaround``: the documented workaround, reported separately;
- ``info``: supporting evidence (CPU stand-ins with fake CUDA tensors,
  emulations, inspections); shown on the page, never a verdict.

The cell status (``derive_status``, from ``_outcome.py``: the rule's one place) follows
ARCHITECTURE.md: ``fail`` when a main stage matched a signature, else ``error`` when one
failed otherwise, else ``skip`` when one could not run, else ``pass`` only if every main
stage completed and at least one of them checked an output numerically
(``Stage.check_close``). A workflow that merely ran is not a pass.

The result goes to the file named by ``--result PATH`` (or the environment
variable ``REPROMATRIX_RESULT``), rewritten atomically after every stage so
that the runner still knows which stage was running if the process dies.
Nothing is ever parsed from stdout.

Usage in a repro::

    SIGNATURES = [Signature("gpu_id", exc="AttributeError",
                            pattern=r"'torch\\.device' object has no attribute 'gpu_id'")]

    def main(r):
        model = r.stage("compile", compile_fn, requires=["cuda", "torch_tensorrt"])
        r.stage("run", run_fn, model, after=["compile"])

    if __name__ == "__main__":
        protocol.main(META, SIGNATURES, main)
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, Callable, Dict, Optional, Sequence

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _outcome import BROKEN, CRASH, ERROR, FAIL, PASS, SKIP, TIMEOUT, derive_status, workaround_status  # noqa: E402
from _repro import (  # noqa: E402
    PROTOCOL_VERSION,
    RESULT_ENV,
    TRACEBACK_LIMIT,
    Repro,
    bounded,
    progress,
    result_path_from,
    write_json_atomic,
)
from _requirements import requirement_reason  # noqa: E402
from _signatures import (  # noqa: E402
    Signature,
    exception_chain,
    exception_text,
    match_exception,
    match_signal,
    raised_in,
    strip_ansi,
    type_names,
)
from _stages import ROLES, CheckFailed, Skip, Stage  # noqa: E402
from _versions import DISTRIBUTIONS, package_version, release, version_matches, when_matches  # noqa: E402

# the protocol's public names, wherever beside this file each is defined
__all__ = [
    "BROKEN", "CRASH", "DISTRIBUTIONS", "ERROR", "FAIL", "PASS", "PROTOCOL_VERSION", "RESULT_ENV",
    "ROLES", "SKIP", "TIMEOUT", "TRACEBACK_LIMIT", "CheckFailed", "Repro", "Signature", "Skip",
    "Stage", "derive_status", "exception_chain", "exception_text", "main", "match_exception",
    "match_signal", "package_version", "raised_in", "release", "requirement_reason",
    "result_path_from", "strip_ansi", "type_names", "version_matches", "when_matches",
    "workaround_status", "write_json_atomic",
]


def main(meta: Dict[str, Any], signatures: Sequence[Signature], body: Callable[[Repro], None],
         argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of a repro script: run ``body`` and write the result file.

    An exception escaping ``body`` (outside any stage) is recorded as an
    ``error`` stage named 'harness'. The exit code is always 0 once the
    result is written: the status travels in the file.
    """
    r = Repro(meta["id"], signatures, result_path_from(sys.argv[1:] if argv is None else argv))
    try:
        body(r)
    except Exception:
        s = Stage("harness", "main")
        s.status, s.message = ERROR, "exception outside any stage: %s" % (sys.exc_info()[1],)
        s.traceback = bounded(traceback.format_exc())
        r.first_traceback = r.first_traceback or s.traceback
        r.stages.append(s)
    res = r.finish()
    progress("%s: %s (%s)" % (r.id, res["status"], res["message"]))
    return 0
