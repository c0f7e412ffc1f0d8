"""``changes.atom``: an Atom feed of cell status changes, so people can subscribe.

Flow: store.reader.timeline (per-cell timelines) -> **report.feed** -> out/changes.atom.
One entry per change (cell, before -> after, run, date), newest first. Record
text is hostile and XML 1.0 forbids most control characters: every string is
stripped of them and escaped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from repromatrix.model import KINDS
from repromatrix.rules.verdict import STANDIN
from repromatrix.store.reader import Span

from .written import RenderState

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
FEED_ID = "urn:repromatrix:changes"


def xml_text(value: object) -> str:
    """Text safe inside an XML element: invalid characters dropped, markup escaped (not
    ``xml.sax.saxutils``: its import, urllib.request's, is a tenth of a small render)."""
    text = _NOT_XML.sub("", str(value))
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def xml_attr(value: object) -> str:
    """An XML attribute's value, quoted (``xml_text``, and its quotes and white space)."""
    text = xml_text(value).replace('"', "&quot;")
    return '"' + text.replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;") + '"'


def _time(at: str, fallback: str) -> str:
    """An RFC 3339 time for Atom (records carry ISO times; a bare date or junk falls back)."""
    text = at.strip()
    if re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$", text):
        return text
    return fallback


def shown(segment: Span) -> str:
    """A segment's status with its evidence level ("fail (TensorRT stood in)")."""
    return segment.status + (" (TensorRT stood in)" if segment.evidence == STANDIN else "")


def write_feed(path: Path, title: str, updated: str,
               changes: Sequence[tuple[str, Span, Span]], state: RenderState,
               kinds: Mapping[str, str] | None = None) -> None:
    """Write the feed; ``updated`` is the generation time (RFC 3339); ``kinds``: each catalog
    repro's kind (``model.KINDS``' key), said as each entry's Atom category."""
    parts = ['<?xml version="1.0" encoding="utf-8"?>',
             '<feed xmlns="http://www.w3.org/2005/Atom">',
             f"<title>{xml_text(title)}: status changes</title>",
             f"<id>{FEED_ID}</id>", f"<updated>{updated}</updated>",
             '<link rel="alternate" href="index.html"/>',
             "<author><name>repromatrix</name></author>"]
    for cell, before, after in changes:
        cell = _NOT_XML.sub("", cell)
        when = _time(after.first_at, updated)
        href = "index.html#cell=" + quote(cell, safe="")
        entry_id = f"{FEED_ID}:{quote(cell, safe='')}:{quote(_NOT_XML.sub('', after.first_run), safe='')}"
        summary = (f"{cell}: {shown(before)} -> {shown(after)} in run {after.first_run} "
                   f"(was {shown(before)} since run {before.first_run}, {before.runs} run(s))")
        if after.evidence == STANDIN:
            summary += ("; decided in torch-tensorrt's own code with TensorRT stood in "
                        "(no GPU): a record from real TensorRT outranks it")
        kind = (kinds or {}).get(cell.rsplit("--", 1)[-1], "")
        category = [f"<category term={xml_attr(kind)} label={xml_attr(KINDS[kind])}/>"] \
            if kind in KINDS else []
        parts += ["<entry>",
                  f"<title>{xml_text(cell)}: {xml_text(shown(before))} → {xml_text(shown(after))}</title>",
                  *category,
                  f"<id>{xml_text(entry_id)}</id>",
                  f"<updated>{xml_text(when)}</updated>",
                  f"<link rel=\"alternate\" href={xml_attr(href)}/>",
                  f"<summary>{xml_text(summary)}</summary>",
                  "</entry>"]
    parts.append("</feed>")
    state.write(path, "\n".join(parts) + "\n")
