"""report.cell.env_rows: an environment probe's rows, each value as the JSON encoder writes it."""

from __future__ import annotations

import json

from repromatrix.report.cell import MESSAGE_LIMIT, env_rows

ENCODER = json.JSONEncoder(default=str, ensure_ascii=False)


def test_every_value_is_shown_as_the_json_encoder_writes_it() -> None:
    class Text(str):
        pass

    values = [0, -7, 10**40, True, False, None, 1.5, float("nan"), float("-inf"), "é <x>",
              Text("a subclass of str"), [1, None, "ü"], {"cuda": True, "n": 2}, "x" * 3000]
    env = {f"k{n}": v for n, v in enumerate(values)}
    assert env_rows(env) == [[k, (v if isinstance(v, str) else ENCODER.encode(v))[:MESSAGE_LIMIT]]
                             for k, v in env.items()]
    assert env_rows(None) == [] and env_rows("a probe that failed") == [["probe", "a probe that failed"]]
