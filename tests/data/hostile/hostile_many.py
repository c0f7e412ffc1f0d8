"""Fixture: more stages than one record holds, each with some evidence."""
import protocol

META = {"id": "hostile_many", "title": "many", "upstream": [], "description": "",
        "requires": [], "expect": []}


def _small(s, i):
    s.evidence["x"] = "y" * 300
    s.check(True, f"stage {i}")


def main(r):
    for i in range(600):
        r.stage(f"stage_{i:03d}", _small, i, role="info")


if __name__ == "__main__":
    protocol.main(META, [], main)
