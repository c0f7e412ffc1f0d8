"""README.md and docs/*.md hold together: every relative link finds its file (and, with an
``#anchor``, a heading there, by GitHub's anchor rule), every documented ``repromatrix``
command parses with the project's own parser, every documented ``nox -s NAME`` names a
session of noxfile.py, and the README stays a newcomer's page (at most 300 lines).

Commands are read as tests/project/test_readme_commands.py reads them
(``support.docs.shell_commands``).
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest
from support.docs import COMMENT, FENCE, shell_commands

from repromatrix import paths
from repromatrix.cli import build_parser

ROOT = paths.PROJECT_ROOT
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 300
INLINE_CODE = re.compile(r"(`+).+?\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def prose(text: str) -> str:
    """The text a reader sees as Markdown: no HTML comments, no fenced blocks, no code spans."""
    text = COMMENT.sub("", text)
    text = FENCE.sub("", text)
    return INLINE_CODE.sub("", text)


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation removed, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link: its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file (a repeated one also gets ``-1``, ``-2``, ...)."""
    text = FENCE.sub("", COMMENT.sub("", path.read_text(encoding="utf-8")))
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", text, re.M):
        anchor = github_anchor(heading)
        n = seen.get(anchor, 0)
        out.add(anchor if n == 0 else f"{anchor}-{n}")
        seen[anchor] = n + 1
    return out


def relative_links(path: Path) -> list[str]:
    return [t for t in LINK.findall(prose(path.read_text(encoding="utf-8")))
            if not re.match(r"[a-z][a-z0-9+.-]*:", t, re.I)]  # https:, mailto:, ...


def nox_sessions() -> set[str]:
    """The names of noxfile.py's sessions (a ``name=`` given to ``@nox.session`` wins)."""
    names = set()
    for node in ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            call = deco if isinstance(deco, ast.Call) else None
            target = call.func if call else deco
            if ast.unparse(target) in ("nox.session", "session"):
                named = [k.value.value for k in (call.keywords if call else [])
                         if k.arg == "name" and isinstance(k.value, ast.Constant)]
                names.add(named[0] if named else node.name)
    return names


def nox_session_names(argv: list[str]) -> list[str]:
    """The sessions a ``nox`` command line names (``-s``/``--session``/``--sessions``, until ``--``)."""
    argv = argv[1:argv.index("--")] if "--" in argv else argv[1:]
    names, taking = [], False
    for word in argv:
        if word in ("-s", "--session", "--sessions", "-e"):
            taking = True
        elif word.startswith(("--session=", "--sessions=")):
            names.append(word.split("=", 1)[1])
        elif word.startswith("-"):
            taking = False
        elif taking:
            names.append(word)
    return [n.split("(", 1)[0] for n in names]


def all_commands() -> list[tuple[str, list[str]]]:
    return [(_name(page), argv) for page in PAGES
            for argv in shell_commands(page.read_text(encoding="utf-8"), ("repromatrix", "nox"))]


def test_readme_is_a_newcomer_s_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move reference to docs/")
    readme = "\n".join(lines)
    assert "nox -s matrix" in readme and "nox -s tests" in readme


def test_the_readme_links_every_docs_page() -> None:
    linked = {(ROOT / t.split("#", 1)[0]).resolve() for t in relative_links(ROOT / "README.md")}
    missing = [_name(p) for p in PAGES[1:] if p.resolve() not in linked]
    assert not missing, f"README.md does not link {missing}"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {_name(dest)}")
        elif ROOT not in dest.parents and dest != ROOT:
            broken.append(f"{target}: outside the repository")
    assert not broken, f"{_name(page)}:\n" + "\n".join(broken)


def test_the_pages_have_shell_commands_to_check() -> None:
    found = all_commands()
    assert any(argv[0] == "nox" for _, argv in found)
    assert len([a for _, a in found if a[0] == "repromatrix"]) >= 20, found


@pytest.mark.parametrize("where,argv", [c for c in all_commands() if c[1][0] == "repromatrix"],
                         ids=lambda v: shlex.join(v)[:60] if isinstance(v, list) else v)
def test_every_documented_repromatrix_command_parses(where: str, argv: list[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    try:
        build_parser().parse_args(argv[1:])
    except SystemExit as e:
        pytest.fail(f"{where}: `{shlex.join(argv)}` does not parse (exit {e.code})")


def test_every_documented_nox_command_names_a_session() -> None:
    sessions = nox_sessions()
    assert {"matrix", "tests"} <= sessions
    for where, argv in all_commands():
        if argv[0] == "nox":
            for name in nox_session_names(argv):
                assert name in sessions, f"{where}: `{shlex.join(argv)}`: no session {name!r}"


def test_github_anchor_rule() -> None:
    assert github_anchor("Bisect your own bug") == "bisect-your-own-bug"
    assert github_anchor("`matrix.yaml` reference") == "matrixyaml-reference"
    assert github_anchor("GPU evidence from any GPU machine") == "gpu-evidence-from-any-gpu-machine"
    assert github_anchor("The stand-in lane") == "the-stand-in-lane"
