"""report.answers: what a repro's page says of its workaround where the bug reproduced."""

from __future__ import annotations

import pytest

from repromatrix.report.answers import workaround_answer


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
