"""Fixture: writes far more text than a record holds (a 20 MB check, 6 MB of evidence)."""
import protocol

META = {"id": "hostile_huge", "title": "huge", "upstream": [], "description": "",
        "requires": [], "expect": []}


def _huge(s):
    s.evidence.update({f"k{i}": "E" * 100000 for i in range(60)})
    s.check(True, "W" * 20000000)


def main(r):
    r.stage("huge", _huge)


if __name__ == "__main__":
    protocol.main(META, [], main)
