"""Fixture: prints garbage, writes an unparseable result file, exits 0."""
import sys

import protocol

META = {"id": "fx_garbage", "title": "garbage", "upstream": [], "description": "", "requires": [],
        "expect": []}

if __name__ == "__main__":
    path = protocol.result_path_from(sys.argv[1:])
    print('{"status": "pass"}  <- stdout is never read')
    with open(path, "w") as f:
        f.write("{not json")
