"""What the docker engine says before any build: a base image that is missing here, and a
daemon that does not answer (both exit 3, naming what to do)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.docker import PUBLIC_BASE

from repromatrix.engines.docker.daemon import check_base_images, connect
from repromatrix.engines.images import image_spec
from repromatrix.errors import BaseImageMissing, DockerUnavailable
from repromatrix.model import Settings, Stack

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_missing_base_image_names_it_and_the_mirror_setting(docker_client: Any,
                                                            docker_settings: Settings) -> None:
    missing = "repromatrix-test/no-such-image:1"
    settings = Settings(base_images={PUBLIC_BASE: missing})
    stack = Stack(id="pip-rmtest-nobase", kind="pip", python="3.11", torch="2.13.0")
    ngc = Stack(id="ngc-rmtest", kind="ngc", ngc="99.01")
    with pytest.raises(BaseImageMissing) as info:
        check_base_images(docker_client, [image_spec(stack, settings), image_spec(ngc, settings)])
    text = str(info.value)
    assert missing in text and PUBLIC_BASE in text
    assert "nvcr.io/nvidia/pytorch:99.01-py3" in text, "every missing base is named at once"
    assert "defaults.base_images" in text and "--base-image" in text and "-k" in text
    assert info.value.exit_code == 3


def test_unreachable_daemon_is_exit_3_with_what_to_do(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    with pytest.raises(DockerUnavailable) as info:
        connect(timeout=5)
    assert info.value.exit_code == 3
    assert "no-daemon.sock" in str(info.value) and "dockerd" in str(info.value)
    assert "Traceback" not in str(info.value)
