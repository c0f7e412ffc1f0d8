"""Build once, run anywhere: push content-hash images to a registry, pull them back.

An image's tag is a hash of everything built into it, so a tag found in a
registry is exactly the image this machine would build. ``--registry PREFIX``
pulls a missing tag before building (and builds when the registry does not
have it); ``repromatrix build --push PREFIX`` pushes what it has. The remote
name is ``<PREFIX>/<local repository>:<tag>``, e.g.
``127.0.0.1:5000/team/repromatrix/pip-torch2.13.0-pypi-py3.11:0123456789abcdef``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import docker
import docker.errors

from repromatrix.errors import InfraError

from .daemon import ENGINE_ERRORS, find_image, first_line


def remote_name(prefix: str, local_tag: str) -> tuple[str, str]:
    """(repository, tag) of ``local_tag`` under the registry ``prefix``."""
    repo, _, tag = local_tag.rpartition(":")
    return f"{prefix.rstrip('/')}/{repo}", tag


def pull(client: docker.DockerClient, prefix: str, local_tag: str,
         log: Callable[[str], None]) -> bool:
    """Pull ``local_tag`` from the registry and tag it locally; False when it has none."""
    repo, tag = remote_name(prefix, local_tag)
    try:
        image = client.images.pull(repo, tag=tag)
    except ENGINE_ERRORS as exc:
        log(f"  {repo}:{tag} is not in the registry ({first_line(exc)}): building it")
        return False
    local_repo, _, local = local_tag.rpartition(":")
    image.tag(local_repo, local)
    log(f"  pulled {repo}:{tag}")
    return True


def push(client: docker.DockerClient, prefix: str, local_tag: str,
         log: Callable[[str], None]) -> str:
    """Push ``local_tag`` to the registry; returns the remote name, raises InfraError on failure."""
    image = find_image(client, local_tag)
    if image is None:
        raise InfraError(f"cannot push {local_tag}: no such local image")
    repo, tag = remote_name(prefix, local_tag)
    image.tag(repo, tag)
    try:
        for chunk in client.api.push(repo, tag=tag, stream=True, decode=True):
            if "error" in chunk:
                raise InfraError(f"pushing {repo}:{tag} failed: {chunk['error']}")
    except ENGINE_ERRORS as exc:
        raise InfraError(f"pushing {repo}:{tag} failed: {first_line(exc)}") from None
    finally:
        with contextlib.suppress(*ENGINE_ERRORS):
            client.images.remove(f"{repo}:{tag}", noprune=True)  # the local alias only
    log(f"  pushed {repo}:{tag}")
    return f"{repo}:{tag}"
