"""images: Dockerfile rendering per flavour, content-hash tags, mirror map, CA bundle, labels."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from repromatrix.engines.images import (
    build_context,
    image_spec,
    image_tag,
    requirements,
    resolve_base_image,
    split_image,
)
from repromatrix.errors import ConfigError
from repromatrix.model import Settings, Stack

PIP = Stack(id="pip-py3.11-t2.5.1-tv0.20.1-ttrt2.5.0-cu124", kind="pip", python="3.11",
            torch="2.5.1", torchvision="0.20.1", torch_tensorrt="2.5.0", cuda="12.4", index="cu124")
CPU = Stack(id="pip-t2.13-cpu", kind="pip", python="3.11", torch="2.13.0", cuda="cpu")
NGC = Stack(id="ngc-24.08", kind="ngc", ngc="24.08")
# Docker's reference grammar, simplified: lowercase path components, then a tag.
TAG_RE = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*:[\w][\w.-]{0,127}$")


@pytest.fixture
def wheelhouse(tmp_path: Path) -> Path:
    wh = tmp_path / "wheels"
    wh.mkdir()
    (wh / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"not really a wheel")
    (wh / "README.txt").write_text("ignored: not a distribution")
    return wh


@pytest.fixture
def ca(tmp_path: Path) -> Path:
    path = tmp_path / "corp-ca.pem"
    path.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    return path


def from_line(dockerfile: str) -> str:
    return next(line for line in dockerfile.splitlines() if line.startswith("FROM ")).split()[1]


def pip_install_words(dockerfile: str) -> list[str]:
    """The words of the (single) `pip install` RUN instruction, continuation lines joined."""
    joined = dockerfile.replace("\\\n", " ")
    line = next(ln for ln in joined.splitlines() if "pip install" in ln)
    return shlex.split(line.split("pip install", 1)[1].replace("$(", "").replace(")", ""))


def labels_of(dockerfile: str) -> dict[str, str]:
    """Parse the LABEL instruction the way docker does for key="json-escaped value" pairs."""
    joined = dockerfile.replace("\\\n", " ")
    line = next(ln for ln in joined.splitlines() if ln.startswith("LABEL "))
    pairs = re.findall(r'([\w.]+)=("(?:[^"\\]|\\.)*")', line)
    return {k: json.loads(v) for k, v in pairs}


@pytest.mark.parametrize("stack", [PIP, CPU, replace(NGC, packages=("onnx",))],
                         ids=lambda s: s.kind + "-" + s.id)
def test_every_flavour_renders_a_complete_dockerfile(stack: Stack) -> None:
    spec = image_spec(stack, Settings(packages=("onnx",)), version="9.9.9")
    text = spec.dockerfile
    assert "{{" not in text and "{%" not in text
    assert text.count("FROM ") == 1
    assert "pip install" in text and "onnx" in text
    assert text.endswith("\n") and "\n\n\n" not in text
    assert TAG_RE.match(spec.tag), spec.tag


def test_pip_flavour_installs_the_torch_family_together_from_the_cuda_index() -> None:
    spec = image_spec(PIP, Settings(extra_index_urls=("https://pypi.nvidia.com",)), version="1")
    assert from_line(spec.dockerfile) == "python:3.11-slim"
    assert "python3 -m venv /opt/venv" in spec.dockerfile
    assert "PATH=/opt/venv/bin:$PATH" in spec.dockerfile
    words = pip_install_words(spec.dockerfile)
    assert {"torch==2.5.1", "torchvision==0.20.1", "torch-tensorrt==2.5.0"} <= set(words)
    assert words[words.index("--index-url") + 1] == "https://download.pytorch.org/whl/cu124"
    extra = [words[i + 1] for i, w in enumerate(words) if w == "--extra-index-url"]
    assert extra == ["https://pypi.org/simple", "https://pypi.nvidia.com"]
    assert "torch==2.5.1" in " ".join(words) and spec.dockerfile.count("pip install") == 1


def test_pip_flavour_follows_python_and_index_choices() -> None:
    spec = image_spec(replace(CPU, python="3.12", index="https://mirror.example/torch"), Settings(),
                      version="1")
    assert from_line(spec.dockerfile) == "python:3.12-slim"
    words = pip_install_words(spec.dockerfile)
    assert words[words.index("--index-url") + 1] == "https://mirror.example/torch"
    pypi_only = pip_install_words(image_spec(CPU, Settings(), version="1").dockerfile)
    assert "--index-url" not in pypi_only
    assert image_spec(replace(CPU, python=None), Settings(python="3.10"), version="1") \
        .public_base == "python:3.10-slim"


def test_ngc_flavour_keeps_nvidia_pins_and_records_the_constraint_file() -> None:
    ngc = replace(NGC, torch="2.5.0a0+872d972e41", torch_tensorrt="2.5.0a0", tensorrt="10.3.0",
                  packages=("onnx",))
    spec = image_spec(ngc, Settings(packages=("onnxscript",)), version="1")
    text = spec.dockerfile
    assert from_line(text) == "nvcr.io/nvidia/pytorch:24.08-py3"
    assert "torch==" not in text and "torch-tensorrt" not in text and "venv" not in text
    assert "/etc/pip/constraint.txt" in text and "ngc-pip-constraint.txt" in text
    assert "-c /etc/pip/constraint.txt" in text
    assert "onnxscript" not in text  # defaults.packages are for pip stacks
    bare = image_spec(NGC, Settings(packages=("onnxscript",)), version="1").dockerfile
    assert "pip install" not in bare


def test_extra_packages_merge_and_the_stack_pin_wins() -> None:
    stack = replace(CPU, packages=("onnx==1.16.0",))
    reqs = requirements(stack, Settings(packages=("onnx>=1.15", "numpy<2")))
    assert reqs == ["torch==2.13.0", "onnx==1.16.0", "numpy<2"]
    assert requirements(replace(CPU, torch=">=2.13,<2.14"), Settings())[0] == "torch>=2.13,<2.14"
    trt = replace(PIP, tensorrt="10.3")  # informational: torch-tensorrt's own deps pick TensorRT
    assert not any(r.startswith("tensorrt") for r in requirements(trt, Settings()))


def test_every_stack_of_the_project_matrix_renders() -> None:
    from repromatrix.config.matrix import load_matrix

    matrix = load_matrix()
    built = [s for s in matrix.stacks if s.kind != "local"]
    assert built
    tags = set()
    for stack in built:
        spec = image_spec(stack, matrix.settings, version="1")
        assert TAG_RE.match(spec.tag), spec.tag
        tags.add(spec.tag)
        if stack.kind == "pip":
            words = pip_install_words(spec.dockerfile)
            assert f"torch=={stack.torch}" in words
    assert len(tags) == len(built)


def test_tag_is_stable_for_identical_inputs(wheelhouse: Path, ca: Path) -> None:
    settings = Settings(ca_bundle=str(ca), find_links=(str(wheelhouse),))
    first = image_spec(CPU, settings, version="1")
    again = image_spec(CPU, Settings(ca_bundle=str(ca), find_links=(str(wheelhouse),)), version="1")
    assert first.tag == again.tag and first.dockerfile == again.dockerfile
    assert first.tag.startswith("repromatrix/pip-t2.13-cpu:")


def test_tag_changes_with_every_build_input(wheelhouse: Path, ca: Path, tmp_path: Path) -> None:
    base = Settings(ca_bundle=str(ca), find_links=(str(wheelhouse),))
    tags = {"base": image_spec(CPU, base, version="1").tag}
    tags["torch"] = image_spec(replace(CPU, torch="2.13.1"), base, version="1").tag
    tags["harness"] = image_spec(CPU, base, version="2").tag
    tags["index"] = image_spec(CPU, replace(base, extra_index_urls=("https://x.example",)),
                               version="1").tag
    tags["mirror"] = image_spec(CPU, replace(base, base_images={"python:3.11-slim": "local/py"}),
                                version="1").tag
    tags["packages"] = image_spec(CPU, replace(base, packages=("onnx",)), version="1").tag
    ca.write_text(ca.read_text() + "# another cert\n")
    tags["ca bytes"] = image_spec(CPU, base, version="1").tag
    (wheelhouse / "numpy-2.0.0-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"x")
    tags["wheelhouse"] = image_spec(CPU, base, version="1").tag
    assert len(set(tags.values())) == len(tags), tags


def test_tag_ignores_files_that_are_not_distributions(wheelhouse: Path) -> None:
    settings = Settings(find_links=(str(wheelhouse),))
    before = image_spec(CPU, settings, version="1").tag
    (wheelhouse / "notes.md").write_text("hello")
    assert image_spec(CPU, settings, version="1").tag == before


@pytest.mark.parametrize("stack_id", ["pip-t2.5.1+cu124", "NGC_24.08", "a..b--c", "x"])
def test_image_tag_is_a_valid_docker_reference(stack_id: str) -> None:
    tag = image_tag(stack_id, "0123456789abcdef" * 4)
    assert TAG_RE.match(tag), tag
    assert tag.endswith(":0123456789abcdef")


def test_mirror_map_exact_name_and_repository_prefix() -> None:
    mirrors = {"python:3.11-slim": "repromatrix-local/bookworm-python:3.11",
               "nvcr.io/nvidia/pytorch": "registry.internal:5000/nvidia/pytorch"}
    assert resolve_base_image("python:3.11-slim", mirrors) == "repromatrix-local/bookworm-python:3.11"
    assert resolve_base_image("python:3.12-slim", mirrors) == "python:3.12-slim"
    assert resolve_base_image("nvcr.io/nvidia/pytorch:24.08-py3", mirrors) == \
        "registry.internal:5000/nvidia/pytorch:24.08-py3"
    assert resolve_base_image("nvcr.io/nvidia/pytorch:24.08-py3",
                              {"nvcr.io/nvidia/pytorch": "local/pt:fixed"}) == "local/pt:fixed"
    assert split_image("registry.internal:5000/x/y") == ("registry.internal:5000/x/y", None)
    assert split_image("registry.internal:5000/x/y:t") == ("registry.internal:5000/x/y", "t")


def test_mirror_map_rewrites_from_but_labels_keep_the_public_name() -> None:
    settings = Settings(base_images={"python:3.11-slim": "repromatrix-local/bookworm-python:3.11"})
    spec = image_spec(CPU, settings, version="1")
    assert from_line(spec.dockerfile) == "repromatrix-local/bookworm-python:3.11"
    assert spec.base_image == "repromatrix-local/bookworm-python:3.11"
    assert spec.public_base == "python:3.11-slim"
    assert labels_of(spec.dockerfile)["repromatrix.base_image"] == "python:3.11-slim"


def test_ca_bundle_goes_into_the_system_store_and_pip(ca: Path, tmp_path: Path) -> None:
    spec = image_spec(CPU, Settings(ca_bundle=str(ca)), version="1")
    text = spec.dockerfile
    assert "COPY ca-bundle.crt /usr/local/share/ca-certificates/" in text
    assert "update-ca-certificates" in text
    for var in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        assert f"{var}=/etc/ssl/repromatrix-ca.pem" in text
    # The CA step comes before anything that talks to an index.
    assert text.index("PIP_CERT") < text.index("pip install")
    ctx = build_context(spec, tmp_path / "ctx")
    assert (ctx / "ca-bundle.crt").read_bytes() == ca.read_bytes()
    assert "ca-bundle.crt" not in image_spec(CPU, Settings(), version="1").dockerfile


def test_the_context_holds_only_the_ca_bytes_the_tag_names(ca: Path, tmp_path: Path) -> None:
    """The bundle is part of the image's identity: one changed between computing the tag
    and building is refused, so a tag never holds another bundle than the one it hashes."""
    spec = image_spec(CPU, Settings(ca_bundle=str(ca)), version="1")
    assert spec.ca_sha256 == hashlib.sha256(ca.read_bytes()).hexdigest()
    ca.write_text(ca.read_text() + "# another cert\n")
    with pytest.raises(OSError, match="changed after the image tag was computed"):
        build_context(spec, tmp_path / "ctx")
    assert image_spec(CPU, Settings(ca_bundle=str(ca)), version="1").tag != spec.tag


def test_missing_ca_bundle_or_wheelhouse_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="defaults.ca_bundle"):
        image_spec(CPU, Settings(ca_bundle=str(tmp_path / "nope.pem")))
    with pytest.raises(ConfigError, match="defaults.find_links"):
        image_spec(CPU, Settings(find_links=(str(tmp_path / "nope"),)))


def test_build_context_holds_dockerfile_and_wheelhouse(wheelhouse: Path, tmp_path: Path) -> None:
    spec = image_spec(CPU, Settings(find_links=(f"file://{wheelhouse}", "https://x.example/links")),
                      version="1")
    words = pip_install_words(spec.dockerfile)
    links = [words[i + 1] for i, w in enumerate(words) if w == "--find-links"]
    assert links == ["https://x.example/links", "/opt/repromatrix/wheels/0"]
    ctx = build_context(spec, tmp_path / "ctx")
    assert (ctx / "Dockerfile").read_text() == spec.dockerfile
    copied = sorted(p.name for p in (ctx / "wheels" / "0").iterdir())
    assert copied == ["torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"]
    src = wheelhouse / copied[0]
    assert os.stat(ctx / "wheels" / "0" / copied[0]).st_ino == src.stat().st_ino  # a hard link


def test_labels_carry_the_stack_spec_and_harness_version() -> None:
    spec = image_spec(PIP, Settings(), version="3.1.4")
    labels = labels_of(spec.dockerfile)
    assert json.loads(labels["repromatrix.stack"]) == PIP.spec()
    assert labels["repromatrix.harness_version"] == "3.1.4"
    assert labels["repromatrix.stack_id"] == PIP.id and labels["repromatrix.managed"] == "1"
    assert spec.labels["repromatrix.inputs_hash"] == spec.inputs_hash
    assert json.loads(spec.labels["repromatrix.stack"]) == PIP.spec()


def test_default_version_is_the_package_version() -> None:
    import repromatrix

    assert labels_of(image_spec(CPU, Settings()).dockerfile)["repromatrix.harness_version"] == \
        repromatrix.__version__


def test_local_and_unknown_kinds_have_no_image() -> None:
    with pytest.raises(ConfigError):
        image_spec(Stack(id="local", kind="local", interpreter="/usr/bin/python3"), Settings())
    with pytest.raises(ConfigError, match="ngc"):
        image_spec(Stack(id="ngc-x", kind="ngc"), Settings())
