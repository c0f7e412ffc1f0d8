"""Torch helpers shared by the repros (not a repro: the name starts with '_').

Fake CUDA without a GPU (DOSSIER section 0): inside ``FakeTensorMode``,
``torch.empty(shape, device="cuda")`` yields fake ``cuda:0`` tensors on a
CPU-only host, while ``.to("cuda")`` or building a module under
``torch.device("cuda")`` needs a driver. So modules are built on CPU and each
parameter/buffer is swapped for a fake CUDA tensor inside the mode.

Python 3.8+, imports torch lazily.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Tuple


def fake_mode() -> Any:
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode()


def fake_cuda_params(module: Any, device: str = "cuda", requires_grad: bool = False) -> Any:
    """Swap every parameter and buffer of ``module`` for an empty fake tensor on ``device``.

    Must be called inside an active ``FakeTensorMode``. Parameters do not
    require grad by default: a fake CUDA parameter that requires grad makes
    autograd ask for a CUDA stream, which aborts torch 2.9.x CUDA wheels on a
    host without a driver ("CUDA driver version is insufficient", SIGABRT).
    The stand-ins only need device propagation.
    """
    import torch

    for mod in module.modules():
        for name, p in list(mod._parameters.items()):
            if p is not None:
                mod._parameters[name] = torch.nn.Parameter(
                    torch.empty(p.shape, dtype=p.dtype, device=device), requires_grad=requires_grad)
        for name, b in list(mod._buffers.items()):
            if b is not None:
                mod._buffers[name] = torch.empty(b.shape, dtype=b.dtype, device=device)
    return module


def tensor_devices(module: Any) -> Dict[str, str]:
    """name -> device of every parameter and buffer."""
    out = {n: str(p.device) for n, p in module.named_parameters()}
    out.update({n: str(b.device) for n, b in module.named_buffers()})
    return out


def supported_kwargs(fn: Callable[..., Any], kwargs: Dict[str, Any]) -> Tuple[Dict[str, Any], List[str]]:
    """The kwargs ``fn`` names explicitly, and the names dropped (APIs drift across releases)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return dict(kwargs), []
    kept = {k: v for k, v in kwargs.items() if k in params}
    return kept, sorted(set(kwargs) - set(kept))


def first_output(out: Any) -> Any:
    """The first tensor of a module's output (TRT TorchScript modules return lists)."""
    while isinstance(out, (list, tuple)):
        out = out[0]
    return out


def graph_targets(gm: Any) -> List[str]:
    """The ``call_function`` targets of an FX graph, as strings."""
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
