"""Fixture: runs after hostile_surrogate on the same stack; a check that holds."""
import protocol
import torch

META = {"id": "hostile_after", "title": "after", "upstream": [], "description": "",
        "requires": [], "expect": []}


def _fine(s):
    s.check_close(torch.ones(2), torch.ones(2), what="ones")


def main(r):
    r.stage("fine", _fine)


if __name__ == "__main__":
    protocol.main(META, [], main)
