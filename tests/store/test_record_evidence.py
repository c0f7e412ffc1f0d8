"""A stage's evidence as a record keeps it: every text bounded, nested values as short JSON,
and a mapping with nothing to bound kept as it is (``store.record._bounded_evidence``)."""

from __future__ import annotations

from types import MappingProxyType

from repromatrix.store.record import EVIDENCE_KEYS_LIMIT, NAME_LIMIT, StageResult, _bounded_evidence


def test_evidence_with_nothing_to_bound_is_a_copy_of_itself() -> None:
    raw = {"file": "a.png", "count": 3, "ratio": 0.5, "cleared": True, "none": None}
    kept = _bounded_evidence(raw)
    assert kept == raw and kept is not raw
    assert list(kept) == list(raw)
    assert _bounded_evidence(MappingProxyType(raw)) == raw  # any mapping, the same


def test_every_text_key_and_value_is_bounded_whichever_way_it_is_read() -> None:
    long_text, long_key = "x" * 50, "k" * (NAME_LIMIT + 1)
    for raw in ({"t": long_text}, MappingProxyType({"t": long_text})):
        assert len(_bounded_evidence(raw, limit=45)["t"]) <= 45
    bounded = _bounded_evidence({long_key: 1})
    assert list(bounded) != [long_key] and len(next(iter(bounded))) <= NAME_LIMIT
    assert _bounded_evidence({"n": 10 ** 60}, limit=45)["n"] != 10 ** 60  # as bounded text
    assert _bounded_evidence({"n": 10 ** 40}, limit=45)["n"] == 10 ** 40
    assert _bounded_evidence({1: "a"}) == {"1": "a"}  # a key is text


def test_nested_values_stay_when_short_and_become_bounded_text_when_long() -> None:
    assert _bounded_evidence({"shape": [1, 2, 3]}) == {"shape": [1, 2, 3]}
    nested = _bounded_evidence({"shape": list(range(100))}, limit=60)["shape"]
    assert isinstance(nested, str) and len(nested) <= 60


def test_evidence_keeps_its_first_keys_only() -> None:
    raw = {f"k{n}": n for n in range(EVIDENCE_KEYS_LIMIT + 5)}
    assert list(_bounded_evidence(raw)) == list(raw)[:EVIDENCE_KEYS_LIMIT]


def test_a_stage_with_no_evidence_has_an_empty_one() -> None:
    for evidence in (None, {}, [], "", 0):
        stage = StageResult.from_raw({"name": "s", "status": "pass", "evidence": evidence})
        assert stage is not None and stage.evidence == {}
