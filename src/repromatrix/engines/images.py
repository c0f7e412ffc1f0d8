"""Images stage: turn a planned stack into a Dockerfile, a build context and a tag.

Flow: plan -> **images** -> run. Everything here is pure (no docker calls): the
docker backend (``engines/docker/``) builds what ``image_spec`` describes.

The tag is a content hash over the rendered Dockerfile and every build input
(CA bundle bytes, wheelhouse file names + sizes + mtimes, index urls, harness
version, the stand-in sources on the stand-in lane), so an unchanged stack is never
rebuilt and a changed one always is; a stand-in image never shares a tag with a
real-TensorRT one.

Base images go through the mirror map ``Settings.base_images``: a key is either
an exact image (``python:3.11-slim``) or a repository without tag
(``nvcr.io/nvidia/pytorch``), which keeps the tag of the public name.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from repromatrix import __version__, paths
from repromatrix.config.catalog import package_name
from repromatrix.errors import ConfigError
from repromatrix.model import Settings, Stack

from . import standins

IMAGE_REPO = "repromatrix"
PIP_BASE = "python:{python}-slim"
NGC_BASE = "nvcr.io/nvidia/pytorch:{ngc}-py3"
TORCH_INDEX = "https://download.pytorch.org/whl"
PYPI_INDEX = "https://pypi.org/simple"
TEMPLATES = {"pip": "pip.Dockerfile.j2", "ngc": "ngc.Dockerfile.j2"}
CA_NAME = "ca-bundle.crt"
WHEELS_DIR = "wheels"
WHEEL_SUFFIXES = (".whl", ".tar.gz", ".zip")
# torch-family packages are only ever taken as wheels (never built from source).
BINARY_ONLY = ("torch", "torchvision", "torch-tensorrt", "tensorrt")


@dataclass(frozen=True)
class ImageSpec:
    """Everything needed to build one stack's image, and its content-hash tag."""

    stack: Stack
    template: str
    public_base: str
    base_image: str
    dockerfile: str
    tag: str
    inputs_hash: str
    labels: dict[str, str]
    ca_bundle: Path | None = None
    wheelhouses: tuple[Path, ...] = ()
    ca_sha256: str | None = None  # the CA bundle bytes the tag was computed from
    standin_source: Path | None = None  # the stand-in lane: repros/harness/_standin.py, into the context


@dataclass
class ImageResult:
    """The outcome of making one stack's image (built now, found cached, or failed)."""

    stack_id: str
    tag: str
    ok: bool
    id: str | None = None
    cached: bool = False
    log_path: Path | None = None
    log_tail: str = ""
    error: str = ""
    duration_s: float = 0.0

    def record_image(self) -> dict[str, Any]:
        """The ``image`` field of a result record."""
        return {"tag": self.tag, "id": self.id}


def templates_dir() -> Path:
    """Where the Dockerfile templates live (see paths.images_dir)."""
    folder = paths.images_dir()
    if not (folder / TEMPLATES["pip"]).is_file():
        raise ConfigError(f"Dockerfile templates not found in {folder}")
    return folder


def public_base_image(stack: Stack, settings: Settings) -> str:
    """The public base image a stack's template starts FROM, before the mirror map."""
    if stack.kind == "pip":
        return PIP_BASE.format(python=stack.python or settings.python)
    if stack.kind == "ngc":
        if not stack.ngc:
            raise ConfigError("an ngc stack needs an `ngc` tag", key=f"stacks.{stack.id}.ngc")
        return NGC_BASE.format(ngc=stack.ngc)
    raise ConfigError(f"stack kind {stack.kind!r} has no image", key=f"stacks.{stack.id}.kind")


def resolve_base_image(public: str, mirrors: dict[str, str]) -> str:
    """Apply the mirror map: exact name first, then the repository without its tag."""
    if public in mirrors:
        return mirrors[public]
    repo, tag = split_image(public)
    if repo in mirrors:
        target = mirrors[repo]
        return f"{target}:{tag}" if tag and not split_image(target)[1] else target
    return public


def split_image(name: str) -> tuple[str, str | None]:
    """'repo:tag' -> ('repo', 'tag'); a registry port is not a tag; digests stay whole."""
    if "@" in name:
        return name, None
    head, _, last = name.rpartition("/")
    if ":" in last:
        repo_last, tag = last.split(":", 1)
        return (f"{head}/{repo_last}" if head else repo_last), tag
    return name, None


def index_options(stack: Stack, settings: Settings) -> list[str]:
    """pip index options, one string each: the torch CUDA index, extra indexes, find-links.

    ``stack.index``: None or "pypi" (PyPI only), "cpu"/"cuXXX" (the PyTorch wheel
    index, with PyPI as extra index for the dependencies), or a URL.
    """
    opts: list[str] = []
    index = (stack.index or "").strip()
    if stack.kind == "pip" and index and index != "pypi":
        url = index if "://" in index else f"{TORCH_INDEX}/{index}"
        opts += [f"--index-url {shlex.quote(url)}", f"--extra-index-url {PYPI_INDEX}"]
    opts += [f"--extra-index-url {shlex.quote(url)}" for url in settings.extra_index_urls]
    opts += [f"--find-links {shlex.quote(link)}" for link in settings.find_links
             if not _is_local(link)]
    return opts


def requirements(stack: Stack, settings: Settings) -> list[str]:
    """What pip installs: for pip stacks the pinned torch family, ``settings.packages`` and
    what the stack's repros require; for every stack its own ``packages`` (NGC images keep
    NVIDIA's pins)."""
    reqs: list[str] = []
    defaults: tuple[str, ...] = ()
    if stack.kind == "pip":
        # stack.tensorrt is what torch-tensorrt requires (informational): its own
        # Requires-Dist picks the TensorRT wheels, so it is not pinned again here.
        pins = (("torch", stack.torch), ("torchvision", stack.torchvision),
                ("torch-tensorrt", stack.torch_tensorrt), ("onnxscript", stack.onnxscript),
                ("onnxruntime", stack.onnxruntime))  # a pin takes defaults.packages' place
        reqs += [_requirement(name, spec) for name, spec in pins if spec]
        defaults = settings.packages
    extras: dict[str, str] = {}
    for req in (*defaults, *stack.packages):  # the stack's own pin wins
        extras[package_name(req)] = req
    for req in stack.repro_packages:  # what the repros need, unless pinned above
        extras.setdefault(package_name(req), req)
    taken = {package_name(r) for r in reqs}
    reqs += [r for name, r in extras.items() if name not in taken]
    return reqs


def image_spec(stack: Stack, settings: Settings, *, version: str | None = None,
               standin: tuple[str, ...] = (), harness_dir: Path | None = None) -> ImageSpec:
    """Render the Dockerfile for a stack and derive its content-hash tag and labels
    (``standin``: the run's stand-ins; a pip stack pinning torch-tensorrt is then built on
    the stand-in lane, from the sources in ``harness_dir``)."""
    version = version or __version__
    reqs = requirements(stack, settings)
    lane = standins.spec(stack, reqs, harness_dir) \
        if harness_dir is not None and standins.applies(stack, standin) else None
    public = public_base_image(stack, settings)
    base = resolve_base_image(public, settings.base_images)
    ca = _ca_path(settings)
    wheelhouses = tuple(_local_path(p) for p in settings.find_links if _is_local(p))
    for wh in wheelhouses:
        if not wh.is_dir():
            raise ConfigError(f"wheelhouse folder {wh} does not exist", key="defaults.find_links")
    template = TEMPLATES[stack.kind]
    variables = _template_vars(stack, settings, public, base, ca, wheelhouses, version, reqs)
    variables["standin"] = standins.docker_vars(lane) if lane else None
    dockerfile = render(template, variables)
    ca_sha = hashlib.sha256(ca.read_bytes()).hexdigest() if ca else None
    digest = inputs_hash(dockerfile, ca_sha, wheelhouses, settings, version,
                         lane["sources_sha256"] if lane else None)
    labels = {"repromatrix.managed": "1", "repromatrix.stack_id": stack.id,
              "repromatrix.stack": _spec_json(stack), "repromatrix.harness_version": version,
              "repromatrix.base_image": public, "repromatrix.inputs_hash": digest}
    if lane:
        labels["repromatrix.standins"] = "tensorrt"
    return ImageSpec(stack=stack, template=template, public_base=public, base_image=base,
                     dockerfile=dockerfile, tag=image_tag(stack.id, digest), inputs_hash=digest,
                     labels=labels, ca_bundle=ca, wheelhouses=wheelhouses, ca_sha256=ca_sha,
                     standin_source=harness_dir / standins.SOURCE if lane and harness_dir else None)


def render(template: str, variables: dict[str, Any]) -> str:
    """Render one template from ``templates_dir()`` (strict: a missing variable is an error)."""
    text = _template_env(str(templates_dir())).get_template(template).render(**variables)
    return re.sub(r"\n{3,}", "\n\n", text)


@functools.lru_cache(maxsize=4)
def _template_env(folder: str) -> jinja2.Environment:
    """One environment per templates folder: each template is compiled once per process, not
    once per stack (a no-op run over the 46-stack matrix spent ~0.9 s compiling)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters["dockerquote"] = lambda s: json.dumps(str(s))
    env.filters["shquote"] = lambda s: shlex.quote(str(s))
    return env


def inputs_hash(dockerfile: str, ca_sha: str | None, wheelhouses: tuple[Path, ...],
                settings: Settings, version: str, standins_sha: str | None = None) -> str:
    """sha256 over the rendered Dockerfile and every input that goes into the build context:
    the CA bundle by its bytes (``ca_sha``), since it changes what the image trusts, and the
    stand-in sources (``standins_sha``) on the stand-in lane."""
    h = hashlib.sha256()
    parts: dict[str, Any] = {
        "dockerfile": dockerfile, "harness_version": version,
        "extra_index_urls": list(settings.extra_index_urls), "find_links": list(settings.find_links),
        "ca_bundle": ca_sha,
        "wheelhouses": [wheelhouse_listing(wh) for wh in wheelhouses],
    }
    if standins_sha:  # absent otherwise: the tags of images off the lane stay as they were
        parts["standins"] = standins_sha
    h.update(json.dumps(parts, sort_keys=True).encode())
    return h.hexdigest()


def image_tag(stack_id: str, digest: str) -> str:
    """``repromatrix/<stack id, docker-safe>:<first 16 hex of the inputs hash>``."""
    name = re.sub(r"[^a-z0-9._-]+", "-", stack_id.lower())
    name = re.sub(r"[._-]{2,}", "-", name).strip("._-") or "stack"
    return f"{IMAGE_REPO}/{name}:{digest[:16]}"


def build_context(spec: ImageSpec, dest: Path) -> Path:
    """Write the Dockerfile, the CA bundle and the wheelhouse (hard links) into ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    (dest / "Dockerfile").write_text(spec.dockerfile)
    if spec.ca_bundle:
        data = spec.ca_bundle.read_bytes()
        if hashlib.sha256(data).hexdigest() != spec.ca_sha256:  # the tag names these bytes only
            raise OSError(f"the CA bundle {spec.ca_bundle} changed after the image tag was "
                          "computed: run again")
        (dest / CA_NAME).write_bytes(data)
    if spec.standin_source:
        shutil.copy2(spec.standin_source, dest / standins.SOURCE)
        shutil.copytree(spec.standin_source.parent / standins.SOURCES, dest / standins.SOURCES,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for i, wh in enumerate(spec.wheelhouses):
        target = dest / WHEELS_DIR / str(i)
        target.mkdir(parents=True)
        for f in _wheel_files(wh):
            _link_or_copy(f, target / f.name)
    return dest


def _template_vars(stack: Stack, settings: Settings, public: str, base: str, ca: Path | None,
                   wheelhouses: tuple[Path, ...], version: str,
                   reqs: list[str]) -> dict[str, Any]:
    opts = index_options(stack, settings)
    opts += [f"--find-links /opt/repromatrix/wheels/{i}" for i in range(len(wheelhouses))]
    if stack.kind == "pip":
        opts.append("--only-binary=" + ",".join(BINARY_ONLY))
    return {"stack": stack, "stack_spec_json": _spec_json(stack), "harness_version": version,
            "template": TEMPLATES[stack.kind], "public_base": public, "base_image": base,
            "ca_bundle": CA_NAME if ca else None, "wheelhouses": [str(w) for w in wheelhouses],
            "wheels_context_dir": WHEELS_DIR, "pip_options": opts,
            "requirements": reqs}


def _spec_json(stack: Stack) -> str:
    return json.dumps(stack.spec(), sort_keys=True, separators=(",", ":"))


def _requirement(name: str, spec: str) -> str:
    spec = spec.strip()
    return f"{name}{spec}" if spec[:1] in "<>=!~" else f"{name}=={spec}"


def _ca_path(settings: Settings) -> Path | None:
    if not settings.ca_bundle:
        return None
    ca = Path(settings.ca_bundle).expanduser()
    if not ca.is_file():
        raise ConfigError(f"CA bundle {ca} is not a file", key="defaults.ca_bundle")
    return ca


def _is_local(link: str) -> bool:
    return "://" not in link or link.startswith("file://")


def _local_path(link: str) -> Path:
    return Path(link.removeprefix("file://")).expanduser()


def _wheel_files(wh: Path) -> list[Path]:
    return sorted(f for f in wh.iterdir() if f.is_file() and f.name.endswith(WHEEL_SUFFIXES))


def wheelhouse_listing(wh: Path) -> list[tuple[str, int, int]]:
    """(name, size, mtime) of each distribution in a wheelhouse: a changed wheel changes it."""
    return [(f.name, f.stat().st_size, int(f.stat().st_mtime)) for f in _wheel_files(wh)]


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
