"""Fixture: prints terminal escapes and a NUL, and fails with them in its message."""
import protocol

META = {"id": "hostile_noisy", "title": "noisy", "upstream": [], "description": "",
        "requires": [], "expect": []}
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x00"


def _noisy(s):
    print("runner says " + HOSTILE, flush=True)
    raise RuntimeError("bad " + HOSTILE)


def main(r):
    r.stage("noisy", _noisy)


if __name__ == "__main__":
    protocol.main(META, [], main)
