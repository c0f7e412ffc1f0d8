"""Every environment variable the harness reads, in one table (docs/command-line.md shows the same).

Precedence everywhere: command line, then environment, then matrix.yaml
``defaults``. Nothing outside this module calls ``os.environ`` for a
``REPROMATRIX_*`` setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# Variables that are no command-line option; an option's own variable is declared with
# the option (config/flags.py), which adds it here through ``declare``.
VARIABLES: dict[str, str] = {
    "REPROMATRIX_VENV_DIR": "cache folder of the venv backend (default ~/.cache/repromatrix/venvs)",
    "REPROMATRIX_IMAGES_DIR": "folder of the Dockerfile templates (default: the project's images/)",
    "REPROMATRIX_REPORT_DIR": "folder of the page templates and assets (default: the project's report/)",
}


# Where the host says its CA bundle is: forwarded into builds unless `--ca-bundle none`
# (pip's own `cert` setting in its config files counts too; see options.host_ca_bundle).
HOST_CA_VARIABLES = ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")


def declare(name: str, meaning: str) -> None:
    """Add an option's variable to the table (config/flags.py, once per option)."""
    if not name.startswith("REPROMATRIX_"):
        raise ValueError(f"{name}: repromatrix's variables are named REPROMATRIX_*")
    VARIABLES[name] = meaning


def host(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """A variable of the host's own configuration (HOST_CA_VARIABLES), or None."""
    if name not in HOST_CA_VARIABLES:
        raise KeyError(f"{name} is not a host variable repromatrix reads")
    value = (os.environ if environ is None else environ).get(name, "")
    return value or None


def read(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The variable's value, or None when unset or empty; only names in VARIABLES."""
    if name not in VARIABLES:
        raise KeyError(f"{name} is not a documented repromatrix variable")
    value = (os.environ if environ is None else environ).get(name, "")
    return value or None
