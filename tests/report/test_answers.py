"""report.answers: what a repro's page says of its workaround where the bug reproduced."""

from __future__ import annotations

import re

import pytest
from support.sites import history_record

from repromatrix.report.answers import workaround_answer
from repromatrix.report.render import render_site
from repromatrix.store.results import ResultStore


@pytest.mark.parametrize("tried, said, works, decided", [
    (("pass", "pass", "fail"), "workaround works on 2 of 3", 2, 3),
    (("pass", "skip", "error"), "workaround works on 1 of 1 (2 cannot tell)", 1, 1),
    (("fail", "fail"), "workaround works on 0 of 2", 0, 2),
    # a workaround stage that could not run is not a failed workaround
    (("skip",) * 14, "workaround: cannot tell on 14 (its stage ended skip, no verdict)", 0, 0),
    (("skip", "error"), "workaround: cannot tell on 2 (its stage ended error, skip, no verdict)", 0, 0),
])
def test_the_workaround_is_judged_only_where_its_stage_decided(tried, said, works, decided):
    assert workaround_answer(tried) == (said, works, decided)


def test_the_repro_page_says_cannot_tell_where_no_workaround_stage_ran(tmp_path):
    """The repro page's workaround line, rendered: no "works on 0 of N" where the workaround
    stage skipped on every failing stack, and the undecided ones counted beside a verdict."""
    store = ResultStore(tmp_path / "results")
    for i, w in enumerate(("skip", "error")):
        store.append(history_record(f"pip-{i}", "none", 0, "fail", workaround=w))
    for i, w in enumerate(("pass", "skip")):
        store.append(history_record(f"pip-{i}", "some", 0, "fail", workaround=w))
    render_site([store.root], tmp_path / "site")

    def said(repro: str) -> str:
        page = (tmp_path / "site" / f"repro-{repro}.html").read_text()
        return re.search(r'<dd id="workaround">(.*?)</dd>', page).group(1)

    assert said("none") == "workaround: cannot tell on 2 (its stage ended error, skip, no verdict)"
    assert said("some") == ("works on 1 of 1 stack where the bug reproduces "
                            "(1 cannot tell: its stage did not run)")
