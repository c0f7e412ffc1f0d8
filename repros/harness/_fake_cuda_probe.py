"""Whether fake CUDA stand-ins work here: run by ``_isolate.fake_cuda_probe`` in a child
interpreter (``python _fake_cuda_probe.py with-grad|without-grad``), since on some stacks
the attempt takes the process down. Prints "fake CUDA ok" when it worked.

It does what every fake-CUDA stand-in does (``_torchutil.fake_cuda_params``: parameters
built without grad), or the same with grad: on torch 2.9.x CUDA wheels without a driver
the autograd accumulator asks for a CUDA stream and the process aborts.

Not a repro (the name starts with '_'). Standard library and torch, Python 3.8+.
"""

from __future__ import annotations

import sys

GRAD = {"with-grad": True, "without-grad": False}


def main(argv: list) -> int:
    import torch

    import _torchutil

    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    with _torchutil.fake_mode():
        _torchutil.fake_cuda_params(conv, requires_grad=GRAD[argv[0]])
        x = torch.empty(1, 3, 16, 16, device="cuda")
        y = conv(x)
        assert str(y.device) == "cuda:0", y.device
        torch.export.export(conv, (x,), strict=False)
    print("fake CUDA ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
