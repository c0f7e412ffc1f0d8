"""Next-step commands in error messages, complete enough to paste.

CLI side. A hint repeats the command the user ran with everything it used (the
matrix, the catalog, the mirror map, the CA bundle, the wheelhouses, the
backend: ``config.flags.reproduce_args``), changed only where the hint says.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from repromatrix.config.flags import reproduce_args
from repromatrix.config.matrix import Matrix
from repromatrix.config.options import RunOptions
from repromatrix.errors import BaseImageMissing
from repromatrix.model import Plan
from repromatrix.paths import PROJECT_ROOT

from .common import Selection

# Public base images a local stand-in can be made for (scripts/make-base-image.sh: Debian
# bookworm, whose Python is 3.11), and the name docs/restricted-networks.md gives that image.
LOCAL_BASES = {"python:3.11-slim": "repromatrix-local/bookworm-python:3.11"}
MAKE_BASE_IMAGE = PROJECT_ROOT / "scripts" / "make-base-image.sh"


def selection(asked: Selection) -> str | None:
    """The run's selection as a -k expression (None: --all)."""
    if asked.expr:
        return str(asked.expr)
    return None if asked.all_stacks else "default"


def _command(verb: str, matrix: Matrix, options: RunOptions, extra: Sequence[str]) -> str:
    args = reproduce_args(matrix, options)
    if verb == "build":  # builds write no results
        at = args.index("--results")
        args = args[:at] + args[at + 2:]
    return shlex.join(["repromatrix", verb, *args, *extra])


def base_image_hint(exc: BaseImageMissing, asked: Selection, matrix: Matrix,
                    options: RunOptions, plan: Plan) -> BaseImageMissing:
    """``exc`` with ONE command that works as pasted: a missing ``python:3.11-slim`` mapped
    onto the local image ``scripts/make-base-image.sh`` makes (made first: the script does
    nothing when it exists), the stacks whose base nothing here can make left out with
    ``-k`` (naming only stacks the selection has); or, when no selected stack is left,
    the plain statement that none can be built here."""
    verb = str(asked.command)
    sel = selection(asked)
    lines = [str(exc)]
    makeable = LOCAL_BASES if MAKE_BASE_IMAGE.is_file() else {}  # the script: a checkout's
    mapped = {public: makeable[public] for public in exc.missing if public in makeable}
    unmapped = {sid for public, ids in exc.missing.items() if public not in mapped for sid in ids}
    planned = [g.stack for g in plan.groups]
    rest = [s for s in planned if s.id not in unmapped]
    if not rest:
        lines.append("  no selected stack can be built here without those images: pull or load "
                     "them, or map them with --base-image PUBLIC=LOCAL onto images you have")
    else:
        keep = ["-k", sel] if sel else ["--all"]
        if unmapped:
            hit = [s for s in planned if s.id in unmapped]
            ngc_only = all(s.kind == "ngc" for s in hit) and not any(s.kind == "ngc" for s in rest)
            leave = "ngc" if ngc_only else "(" + " or ".join(s.id for s in hit) + ")"
            keep = ["-k", f"({sel}) and not {leave}" if sel else f"not {leave}"]
        maps = [w for public, local in mapped.items() for w in ("--base-image", f"{public}={local}")]
        make = [f"{shlex.join([str(MAKE_BASE_IMAGE), local])} && " for local in mapped.values()]
        what = ", ".join(f"map {p} onto a local image made from Debian" for p in mapped)
        if unmapped:
            what = ", ".join(filter(None, [what, f"leave out {len(unmapped)} stack(s) whose base "
                                                 "image cannot be made here"]))
        lines.append(f"  to go on ({what}):")
        lines.append("    " + "".join(make) + _command(verb, matrix, options, [*keep, *maps]))
    err = BaseImageMissing("\n".join(lines))
    err.missing = exc.missing
    return err
