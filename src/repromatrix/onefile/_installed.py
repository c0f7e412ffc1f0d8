"""Stack side: what a local interpreter has installed, and its PEP 508 marker environment.

Run by ``engines.local.absent_packages`` with the stack's own interpreter (Python 3.8
and later, standard library only); prints one JSON object: ``installed``, the normalised
names of every distribution on its path, and ``env``, the values environment markers
test (what ``packaging.markers.default_environment`` gives, worked out here).
"""
import json
import os
import platform
import re
import sys
from importlib import metadata


def _normalised(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _implementation_version():
    info = sys.implementation.version
    version = f"{info.major}.{info.minor}.{info.micro}"
    if info.releaselevel != "final":
        version += info.releaselevel[0] + str(info.serial)
    return version


def main():
    names = {_normalised(d.metadata["Name"]) for d in metadata.distributions()
             if d.metadata["Name"]}
    env = {
        "implementation_name": sys.implementation.name,
        "implementation_version": _implementation_version(),
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }
    print(json.dumps({"installed": sorted(names), "env": env}))


if __name__ == "__main__":
    main()
