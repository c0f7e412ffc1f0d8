"""Fixture: hangs inside a stage, with a child process in its group (timeout test)."""
import subprocess
import sys
import time

import protocol

META = {"id": "fx_hang", "title": "hangs", "upstream": [], "description": "", "requires": [], "expect": []}


def _hang(s):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    time.sleep(3600)


def main(r):
    r.stage("sleep", _hang)


if __name__ == "__main__":
    protocol.main(META, [], main)
