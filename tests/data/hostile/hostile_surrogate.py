"""Fixture: a main stage fails with a file name that is not UTF-8 (a lone surrogate)."""
import os

import protocol

META = {"id": "hostile_surrogate", "title": "surrogate", "upstream": [], "description": "",
        "requires": [], "expect": []}


def _open_image(s):
    name = os.fsdecode(b"/x/image-\xff.png")
    s.evidence["file"] = name
    raise FileNotFoundError(f"cannot open {name}")


def main(r):
    r.stage("open_image", _open_image)


if __name__ == "__main__":
    protocol.main(META, [], main)
