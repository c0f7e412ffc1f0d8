"""Whether the package index the tests download from answers."""

from __future__ import annotations

import urllib.request


def pypi_reachable() -> bool:
    """True when PyPI's simple index answers a HEAD request within 10 s."""
    try:
        urllib.request.urlopen(urllib.request.Request("https://pypi.org/simple/torch/", method="HEAD"),
                               timeout=10).close()
    except OSError:
        return False
    return True
