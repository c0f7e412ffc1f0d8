"""Fixture: isolated stages that abort, segfault, log their error, and hand back a value (torch).

The process-killing stages run in child processes, so the repro goes on and the
cell's verdict comes from the main stages: here the TensorRT-style error that
was only printed (the log signature), not the abort of the info stage.
"""
import os
import signal

import protocol
import torch

META = {"id": "fx_isolated", "title": "isolated stages", "upstream": [], "description": "",
        "requires": [], "expect": []}
SIGNATURES = [
    protocol.Signature("logged_wildcard", exc="RuntimeError", stage="convert",
                       log=r"reshape dimension with more than one -1 wildcard"),
    protocol.Signature("declared_segv", signal="SIGSEGV", stage="declared",
                       pattern=r"output shape can not be computed"),
]


def _abort(s):
    os.write(2, b"terminate called after throwing an instance of 'c10::Error'\n"
                b"  what():  CUDA error: CUDA driver version is insufficient for CUDA runtime version\n")
    os.abort()


def _declared(s):
    os.write(2, b"[Shuffle]: output shape can not be computed\n")
    os.kill(os.getpid(), signal.SIGSEGV)


def _make(s, n):
    s.note("n", n)
    return torch.arange(float(n))


def _use(s, t):
    s.check_close(t * 2, torch.arange(0.0, 2.0 * len(t), 2.0), what="value from the isolated stage")


def _convert(s):
    # what the TensorRT logger does: write to fd 2 from C, then the converter raises something generic
    os.write(2, b"ERROR: [Torch-TensorRT] - 4: Error Code 4: Shape Error (reshape dimension with "
                b"more than one -1 wildcard. Reshaping [21,3,-1,-1] to [1,21,3,-1,-1].)\n")
    raise RuntimeError("conversion failed")


def _unrelated(s):
    os.write(2, b"some other TensorRT warning\n")
    raise RuntimeError("conversion failed")


def main(r):
    r.stage("fake_cuda_abort", _abort, role="info", isolate=True)
    r.stage("declared", _declared, role="info", isolate=True)
    t = r.stage("make_value", _make, 4, role="info", isolate=True)
    r.stage("use_value", _use, t, after=["make_value"])
    r.stage("convert", _convert, isolate=True)
    r.stage("unrelated", _unrelated, role="info", isolate=True)


if __name__ == "__main__":
    protocol.main(META, SIGNATURES, main)
