"""The pre-commit hook (`.pre-commit-hooks.yaml`, ``python -m repromatrix.cli.hook``): `check`
on each requirements file pre-commit passes, one at a time (``check -r`` takes one file).

pre-commit runs ``entry + args + files``: the hook's ``args`` are `check`'s own options
(``--ignore BUG``, ``--results DIR``, ...), told from the files by `check`'s parser; each
file is checked as ``repromatrix check OPTIONS -r FILE``. Exit: the worst of the files' (0
none affected, 1 a known bug affects one, 2 one cannot be read).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """`check`'s options (with their values) and the files, from pre-commit's arguments."""
    from . import check

    parser = check.add_parser(argparse.ArgumentParser().add_subparsers())
    valued = {flag for a in parser._actions if a.option_strings and a.nargs != 0
              for flag in a.option_strings}
    options: list[str] = []
    files: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg in valued:
            options += [arg, next(args, "")]
        elif arg.startswith("-"):
            options.append(arg)
        else:
            files.append(arg)
    return options, files


def main(argv: Sequence[str] | None = None) -> int:
    """Check each file; the worst exit code."""
    from . import main as repromatrix

    options, files = split(sys.argv[1:] if argv is None else argv)
    worst = 0
    for path in files:
        if len(files) > 1:
            print(f"== {path}", flush=True)
        worst = max(worst, repromatrix(["check", *options, "-r", path]))
        sys.stdout.flush()
    return worst


if __name__ == "__main__":
    sys.exit(main())
