"""Fixture: a segfault the repro declares as its signature (-> fail, not crash)."""
import os
import signal
import sys

import protocol

META = {"id": "fx_declared_crash", "title": "declared crash", "upstream": [], "description": "",
        "requires": [], "expect": []}
SIGNATURES = [protocol.Signature("wildcard_segv", signal="SIGSEGV", stage="ts_convert",
                                 pattern=r"more than one -1 wildcard")]


def _boom(s):
    sys.stderr.write("Error Code 4: Shape Error (reshape dimension with more than one -1 wildcard.)\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGSEGV)


def main(r):
    r.stage("ts_convert", _boom)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
