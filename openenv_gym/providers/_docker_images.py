"""Env images, built offline: a local base image, host-side wheels, content-hashed tags.

An env's image is ``openenv-gym/<env>:<hash>``, where the hash covers everything that goes
into it (Dockerfile, base image id, pinned requirements, openenv_gym's source and, for a
plugin env, the plugin's source): an image rebuilds only when one of those changed. Nothing is
fetched inside a build:

* the base is ``$OPENENV_GYM_BASE_IMAGE`` (default ``python:3.11-slim``) when present or
  pullable, else a Debian base built by ``containers/build-base.sh`` (mmdebstrap piped into
  ``docker import``; debootstrap as fallback);
* Python dependencies are wheels downloaded on the host (``pip download --only-binary``,
  cached under ``~/.cache/openenv-gym/wheels``) and openenv_gym itself is built as a wheel
  from a source checkout, or packed again from the files of a wheel install (which carries
  ``containers/`` under its prefix: setup.cfg's data_files);
  the Dockerfile installs them with ``pip install --no-index``;
* a plugin env (one registered through the ``openenv_gym.envs`` entry point by another
  package) gets the same image plus its package: a wheel built on the host from the folder
  the package was installed from (``pip install [-e] PATH``, found through the entry point's
  distribution), its declared dependencies downloaded with the others.

Example (skipped by doctest: it needs a Docker engine, and a first build needs PyPI):
    >>> import docker
    >>> from openenv_gym.catalog import get_env_info
    >>> client = docker.from_env()                           # doctest: +SKIP
    >>> result = build_image(client, get_env_info("echo"))   # doctest: +SKIP
    >>> result.tag                                            # doctest: +SKIP
    'openenv-gym/echo:3f1c...'
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import unquote, urlparse

from openenv_gym.catalog import ENTRY_POINT_GROUP, EnvInfo
from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.providers._docker_owner import LABEL_PROJECT

__all__ = [
    "BuildResult", "DEFAULT_BASE_IMAGE", "IMAGE_REPO", "PYTHON_VERSION", "base_candidates",
    "build_image", "build_problem", "ensure_base", "env_code_missing", "find_image", "image_tag",
    "local_base_tag", "plugin_distribution", "plugin_source", "prune_old", "requirements",
]

#: The public base image the Dockerfile defaults to (its Python must match PYTHON_VERSION).
DEFAULT_BASE_IMAGE = "python:3.11-slim"
#: The Python version wheels are downloaded for (Debian bookworm's python3, python:3.11-slim).
PYTHON_VERSION = "3.11"
#: Repository prefix of env images: ``openenv-gym/<env>:<hash>``.
IMAGE_REPO = "openenv-gym"

Progress = Callable[[str], None]

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_SOURCE_ROOT = _PACKAGE_DIR.parent


#: Where a wheel install keeps ``containers/`` (setup.cfg's data_files), under its prefix.
_INSTALLED_CONTAINERS = "share/openenv-gym/containers"


def _checkout() -> bool:
    """Whether openenv_gym runs from a source checkout (else from an installed wheel)."""
    return (_SOURCE_ROOT / "setup.cfg").is_file()


def _distribution() -> importlib.metadata.Distribution | None:
    try:
        return importlib.metadata.distribution("openenv-gym")
    except importlib.metadata.PackageNotFoundError:
        return None


def containers_dir() -> Path:
    """The folder with the Dockerfile and build-base.sh: ``$OPENENV_GYM_CONTAINERS_DIR``, else
    the checkout's ``containers/``, else the copy a wheel install put under its prefix."""
    configured = os.environ.get("OPENENV_GYM_CONTAINERS_DIR")
    if configured:
        return Path(configured)
    if _checkout():
        return _SOURCE_ROOT / "containers"
    dist = _distribution()
    for file in (dist.files or []) if dist is not None else []:
        if file.as_posix().endswith(f"{_INSTALLED_CONTAINERS}/Dockerfile"):
            return Path(str(dist.locate_file(file))).resolve().parent  # type: ignore[union-attr]
    return Path(sys.prefix) / _INSTALLED_CONTAINERS

_build_lock = threading.Lock()


@dataclass
class BuildResult:
    """What a build produced.

    Attributes:
        env: Catalog name.
        tag: The image tag.
        size: Image size in bytes.
        seconds: Wall time of the build (0 when the image was already current).
        built: False when an image with the same inputs already existed.
    """

    env: str
    tag: str
    size: int
    seconds: float
    built: bool


def cache_dir() -> Path:
    """Where wheels are cached on the host (``$OPENENV_GYM_CACHE`` or ``~/.cache/openenv-gym``)."""
    root = os.environ.get("OPENENV_GYM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "openenv-gym")
    return Path(root)


def _sha(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def build_problem() -> str | None:
    """Why no env image can be built from this install of openenv_gym, or None when one can.

    An image needs the Dockerfile (:func:`containers_dir`) and openenv_gym as a wheel: built
    from a source checkout, or packed again from the files of a wheel install.
    """
    path = containers_dir() / "Dockerfile"
    if not path.is_file():
        return (f"no Dockerfile at {path}: reinstall openenv-gym (its wheel carries containers/), "
                "install it from a source checkout (pip install -e .), or point "
                "OPENENV_GYM_CONTAINERS_DIR at a checkout's containers/ folder")
    if not _checkout() and not _metadata_files():
        return (f"openenv_gym at {_PACKAGE_DIR} is neither a source checkout nor installed by "
                "pip (no metadata beside it); install it with pip")
    return None


def _require_build_inputs() -> None:
    problem = build_problem()
    if problem:
        raise ProviderUnavailableError(problem)


def _dockerfile() -> Path:
    _require_build_inputs()
    return containers_dir() / "Dockerfile"


# ---------------------------------------------------------------- inputs: requirements

def requirements(info: EnvInfo) -> list[str]:
    """The Python requirements baked into ``info``'s image.

    openenv_gym's own runtime requirements, a plugin env's declared dependencies and
    ``info.image_packages``, each pinned to the version installed on this host when that
    satisfies it (so a worker in a container runs the same gymnasium/numpy as one in a local
    process).
    """
    try:
        declared = importlib.metadata.requires("openenv-gym") or []
    except importlib.metadata.PackageNotFoundError:
        declared = []
    dist = plugin_distribution(info)
    if dist is not None:
        # openenv_gym itself goes in as the wheel of this checkout, not from an index.
        declared = [*declared, *(r for r in dist.requires or [] if _canonical(r) != "openenv-gym")]
    core = [r for r in declared if "extra ==" not in r]
    return sorted({_pin(r) for r in [*core, *info.image_packages]})


def _canonical(requirement: str) -> str:
    name = re.match(r"\s*([A-Za-z0-9._-]+)", requirement)
    return re.sub(r"[-_.]+", "-", name.group(1)).lower() if name else ""


def _pin(requirement: str) -> str:
    try:
        from packaging.requirements import Requirement
    except ImportError:  # not installed on its own (a venv with only the docker extra): pip,
        try:             # which downloads the image's wheels, carries a copy
            from pip._vendor.packaging.requirements import Requirement
        except ImportError:
            return requirement
    req = Requirement(requirement)
    try:
        installed = importlib.metadata.version(req.name)
    except importlib.metadata.PackageNotFoundError:
        return str(req)
    if req.specifier.contains(installed, prereleases=True):
        # Only the version changes: extras (gymnasium[box2d]) and markers stay, or the image
        # would lack what the extra installs.
        req.specifier = type(req.specifier)(f"=={installed}")
    return str(req)


def _platform_tags() -> list[str]:
    # pip does not widen --platform to older glibc tags: list every manylinux tag a glibc 2.28
    # image accepts (both bases are Debian bookworm, glibc 2.36).
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                          platform.machine().lower())
    tags = [f"manylinux_2_{minor}_{machine}" for minor in range(28, 16, -1)]
    return tags + [f"manylinux2014_{machine}"]


def _download_wheels(reqs: list[str], progress: Progress) -> Path:
    """Wheels for ``reqs`` (and their dependencies), downloaded once and cached."""
    key = _sha([PYTHON_VERSION.encode(), *(t.encode() for t in _platform_tags()),
                *(r.encode() for r in reqs)])
    target = cache_dir() / "wheels" / f"deps-{key[:16]}"
    def fill(tmp: Path) -> None:
        progress(f"downloading wheels for {len(reqs)} requirements")
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
               "--only-binary=:all:", "--python-version", PYTHON_VERSION,
               *(arg for tag in _platform_tags() for arg in ("--platform", tag)),
               "--dest", str(tmp), *reqs]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ProviderUnavailableError(
                f"could not download wheels for the image ({' '.join(reqs)}): "
                f"{proc.stderr.strip()[-2000:]}\nThe host needs PyPI (or a pip index/find-links) "
                "once; later builds use the cache in " + str(target.parent))
        (tmp / "requirements.txt").write_text("\n".join(reqs) + "\n")

    # requirements.txt is written last: it marks a complete download.
    return _cached_folder(target, lambda t: (t / "requirements.txt").is_file(), fill)


def _has_wheel(folder: Path) -> bool:
    return any(folder.glob("*.whl"))


def _cached_folder(target: Path, ready: Callable[[Path], bool],
                   fill: Callable[[Path], None]) -> Path:
    """The cache folder ``target``: as it is when ``ready`` says it is complete, else made by
    ``fill`` in a temporary folder that is then renamed into place, so a cache entry is
    complete or absent, also when two processes fill it at once. A folder of that name that
    is not ready (left half-made by an older version, or emptied by hand) is replaced."""
    if ready(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=target.parent))
    try:
        fill(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if target.exists() and not ready(target):
        shutil.rmtree(target, ignore_errors=True)
    try:
        os.rename(tmp, target)
    except OSError:  # another process finished the same work first
        shutil.rmtree(tmp, ignore_errors=True)
    return target


# ---------------------------------------------------------------- inputs: our own source

def _package_files() -> list[Path]:
    return [p for p in sorted(_PACKAGE_DIR.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")]


def _source_files() -> list[Path]:
    """What openenv_gym's wheel is made of, under ``_SOURCE_ROOT``: the package, and the
    checkout's setup.cfg and pyproject.toml or an install's metadata (:func:`_metadata_files`)."""
    if not _checkout():
        return _package_files() + _metadata_files()
    return _package_files() + [_SOURCE_ROOT / n for n in ("setup.cfg", "pyproject.toml")
                               if (_SOURCE_ROOT / n).is_file()]


#: Files of an installed distribution's ``.dist-info`` that pip writes at install time: they do
#: not go into a wheel.
_INSTALL_RECORDS = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def _metadata_files() -> list[Path]:
    """The ``.dist-info`` files of the installed openenv_gym that its wheel carried."""
    dist = _distribution()
    if dist is None:
        return []
    found = [Path(str(dist.locate_file(f))).resolve() for f in dist.files or []
             if f.parts and f.parts[0].endswith(".dist-info") and f.name not in _INSTALL_RECORDS]
    # licenses/ (PEP 639) is a folder of the .dist-info: its files go into the wheel too.
    return sorted(p for p in found if p.is_file() and _SOURCE_ROOT in p.parents)


def source_hash() -> str:
    """Hash of openenv_gym's source (package files, and setup.cfg and pyproject.toml in a
    checkout or the install's metadata)."""
    parts: list[bytes] = []
    for path in _source_files():
        parts += [str(path.relative_to(_SOURCE_ROOT)).encode(), path.read_bytes()]
    return _sha(parts)


def _build_self_wheel(src_hash: str, progress: Progress) -> Path:
    """openenv_gym as a wheel (cached by its source hash): built from the checkout, or packed
    again from the files of a wheel install."""
    _require_build_inputs()
    target = cache_dir() / "wheels" / f"self-{src_hash[:16]}"
    if not _checkout():
        return _repack_installed(target, progress)
    # setup.cfg's data_files name containers/: the build needs them (the image does not).
    extra = [_SOURCE_ROOT / n for n in ("README.md", "LICENSE")] + sorted(
        (_SOURCE_ROOT / "containers").glob("*"))
    files = _source_files() + [p for p in extra if p.is_file()]
    return _build_wheel("openenv_gym", _SOURCE_ROOT, files, target, progress)


def _repack_installed(target: Path, progress: Progress) -> Path:
    """The folder ``target`` holding a wheel of the installed openenv_gym: its package files
    and its ``.dist-info`` metadata, with a RECORD of their hashes (the wheel format's own)."""
    def fill(tmp: Path) -> None:
        progress("packing the installed openenv_gym as a wheel")
        dist = _distribution()
        assert dist is not None  # build_problem() said so
        info_dir = next(p.relative_to(_SOURCE_ROOT).parts[0] for p in _metadata_files())
        record = f"{info_dir}/RECORD"
        rows = []
        name = f"openenv_gym-{dist.version}-py3-none-any.whl"
        with zipfile.ZipFile(tmp / name, "w", zipfile.ZIP_DEFLATED) as wheel:
            for path in _source_files():
                arcname = path.relative_to(_SOURCE_ROOT).as_posix()
                data = path.read_bytes()
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                rows.append(f"{arcname},sha256={digest.decode()},{len(data)}")
                wheel.writestr(arcname, data)
            wheel.writestr(record, "\n".join([*rows, f"{record},,"]) + "\n")

    return _cached_folder(target, _has_wheel, fill)


def _build_wheel(what: str, root: Path, files: list[Path], target: Path,
                 progress: Progress) -> Path:
    """The folder ``target`` holding the wheel of the project ``files`` under ``root``."""
    def fill(tmp: Path) -> None:
        progress(f"building the {what} wheel")
        with _scratch() as scratch, tempfile.TemporaryDirectory(prefix="src-", dir=scratch) as stage:
            # A staged copy keeps build/ and egg-info churn out of the user's folder.
            for path in files:
                dest = Path(stage) / path.relative_to(root)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
            pip = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                   "--disable-pip-version-check", "--wheel-dir", str(tmp), stage]
            # Without build isolation first: isolation fetches the build backend from an index
            # on every build. A fresh venv may lack the backend (3.12+ venvs have no
            # setuptools; 3.11's setuptools 65 builds no wheel without `wheel`) where the
            # isolated `pip install -e .` that installed the plugin worked: then as that did.
            errors = []
            for isolation in (["--no-build-isolation"], []):
                proc = subprocess.run([*pip, *isolation], capture_output=True, text=True)
                if proc.returncode == 0:
                    return
                errors.append(proc.stderr.strip())
        raise ProviderUnavailableError(
            f"could not build the {what} wheel from {root}: {errors[0][-2000:]}\n"
            f"with build isolation: {errors[1][-1000:]}\n"
            f"fix: make the project's build backend importable in {sys.executable} "
            "(`pip install -U setuptools` for setuptools projects), or let pip reach an index")

    return _cached_folder(target, _has_wheel, fill)


# ---------------------------------------------------------------- inputs: a plugin's package

# Folders of a plugin's source tree that never go into its wheel (VCS, caches, build output).
_SKIP_DIRS = {"__pycache__", "build", "dist", "node_modules"}


def _is_builtin(info: EnvInfo) -> bool:
    return info.entry_point.partition(":")[0].split(".")[0] == "openenv_gym"


def plugin_distribution(info: EnvInfo) -> importlib.metadata.Distribution | None:
    """The installed distribution that provides plugin env ``info`` (None for built-ins).

    Found through the ``openenv_gym.envs`` entry point whose module shares the env's top-level
    package, else through the distribution that installed that package.
    """
    if _is_builtin(info):
        return None
    top = info.entry_point.partition(":")[0].split(".")[0]
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.value.partition(":")[0].split(".")[0] == top and ep.dist is not None:
            return ep.dist
    names = importlib.metadata.packages_distributions().get(top) or []
    return importlib.metadata.distribution(names[0]) if names else None


def _direct_url(dist: importlib.metadata.Distribution) -> str:
    """The URL a distribution was installed from (PEP 610), or ``""``."""
    try:
        return str(json.loads(dist.read_text("direct_url.json") or "{}").get("url", ""))
    except (ValueError, AttributeError):
        return ""


def plugin_source(info: EnvInfo) -> Path:
    """Where plugin env ``info``'s package was installed from: a project folder or a wheel.

    Read from the distribution's ``direct_url.json`` (PEP 610), which pip writes for
    ``pip install -e PATH``, ``pip install PATH`` and ``pip install FILE.whl``.

    Raises:
        ProviderUnavailableError: No distribution provides it, or it came from an index (its
            source is not on this host); the message says how to fix it.
    """
    module = info.entry_point.partition(":")[0]
    dist = plugin_distribution(info)
    if dist is None:
        raise ProviderUnavailableError(
            f"env {info.name!r} comes from {module}, which no installed distribution provides; "
            "install the plugin from its folder: pip install -e PATH")
    url = _direct_url(dist)
    if not url:
        # `pip install -e .` leaves NAME.egg-info in the project folder, and Python run from
        # there (python -c, python -m, a notebook) has that folder first on sys.path, so
        # importlib.metadata reports that copy, which has no direct_url.json: ask every copy.
        url = next((u for u in map(_direct_url, importlib.metadata.distributions(
            name=dist.metadata["Name"])) if u), "")
    path = Path(unquote(urlparse(url).path)) if url.startswith("file://") else None
    if path is None or not (path.is_dir() or path.suffix == ".whl") or not path.exists():
        where = f"from {url}" if url else "from a package index"
        raise ProviderUnavailableError(
            f"env {info.name!r} comes from {dist.metadata['Name']} {dist.version}, installed "
            f"{where}; its image is built from the plugin's source folder: install it with "
            "`pip install -e PATH` (or pass provider_options={'image': TAG} for an image of "
            "your own)")
    return path


def _plugin_files(root: Path) -> list[Path]:
    """The regular files of a plugin's project folder that its wheel may be built from.

    Left out: what never goes into a wheel (VCS, caches, build output), a virtual environment
    made in the folder (``python -m venv venv``: thousands of files, hashed at every
    ``gym.make``), and whatever is not a regular file (a dangling link to a data set, a FIFO,
    a socket), which cannot be read, or would block the read.
    """
    files: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not (
            d.startswith(".") or d in _SKIP_DIRS or d.endswith(".egg-info")
            or os.path.isfile(os.path.join(folder, d, "pyvenv.cfg"))))
        files += [Path(folder) / n for n in sorted(names)
                  if not n.endswith((".pyc", ".pyo")) and os.path.isfile(os.path.join(folder, n))]
    return files


def plugin_hash(info: EnvInfo) -> str:
    """Hash of a plugin env's source (its project files, or its wheel); ``""`` for built-ins."""
    if _is_builtin(info):
        return ""
    source = plugin_source(info)
    if source.is_file():
        return _sha([source.name.encode(), source.read_bytes()])
    parts: list[bytes] = []
    for path in _plugin_files(source):
        parts += [str(path.relative_to(source)).encode(), path.read_bytes()]
    return _sha(parts)


def _plugin_wheel(info: EnvInfo, digest: str, progress: Progress) -> Path:
    """The folder holding a plugin env's wheel: built from its folder, or the wheel it came from."""
    source = plugin_source(info)
    target = cache_dir() / "wheels" / f"plugin-{info.name}-{digest[:16]}"
    if source.is_file():
        return _cached_folder(target, _has_wheel, lambda tmp: shutil.copy2(source, tmp / source.name))
    return _build_wheel(f"{info.name} plugin", source, _plugin_files(source), target, progress)


# ---------------------------------------------------------------- the base image

def local_base_tag() -> str:
    """Tag of the locally built Debian base: its suite (``OPENENV_GYM_DEBIAN_SUITE``) and the
    hash of its build script, so that another suite builds another base instead of reusing
    the one there."""
    script = containers_dir() / "build-base.sh"
    digest = _sha([script.read_bytes()])[:12] if script.is_file() else "unknown"
    suite = os.environ.get("OPENENV_GYM_DEBIAN_SUITE") or "bookworm"
    return f"{IMAGE_REPO}/base:{suite}-{digest}"


def base_candidates() -> list[str]:
    """Base images in order of preference: the configured one, then the local Debian base."""
    configured = os.environ.get("OPENENV_GYM_BASE_IMAGE") or DEFAULT_BASE_IMAGE
    return [configured, local_base_tag()]


def _present_base(client: Any) -> tuple[str, str] | None:
    import docker.errors

    for ref in base_candidates():
        try:
            return ref, client.images.get(ref).id
        except docker.errors.ImageNotFound:
            continue
    return None


def ensure_base(client: Any, progress: Progress = lambda _: None) -> tuple[str, str]:
    """A base image that is present: found, pulled, or built locally (in that order).

    Returns:
        ``(reference, image id)``.

    Raises:
        ProviderUnavailableError: No base can be had (message says why and how to fix it).
    """
    found = _present_base(client)
    if found:
        return found
    # Two trainers (or a trainer and `openenv-gym build`) on an engine with no base: the
    # second waits for the first's base and finds it, instead of a second mmdebstrap run
    # beside it whose import leaves the first base untagged (a dangling copy of ~270 MB).
    with _tag_lock(local_base_tag(), progress):
        return _present_base(client) or _fetch_base(client, progress)


def _fetch_base(client: Any, progress: Progress) -> tuple[str, str]:
    """Pull the configured base image, else build the local Debian base (see :func:`ensure_base`)."""
    import docker.errors

    configured = base_candidates()[0]
    progress(f"pulling {configured}")
    try:
        image = client.images.pull(configured)
        return configured, image.id
    except docker.errors.DockerException as exc:
        progress(f"cannot pull {configured} ({str(exc).splitlines()[0][:120]}); "
                 "building a local Debian base")
    tag = local_base_tag()
    script = containers_dir() / "build-base.sh"
    if not script.is_file():
        raise ProviderUnavailableError(f"cannot pull {configured} and {script} is missing: "
                                       "reinstall openenv-gym, or set OPENENV_GYM_BASE_IMAGE")
    started = time.monotonic()
    proc = _run_as_group(["bash", str(script), tag])
    if proc.returncode != 0:
        raise ProviderUnavailableError(
            f"building the local base image {tag} failed (mmdebstrap/debootstrap need the Debian "
            f"mirror and usually root; apt-get install mmdebstrap):\n{proc.stderr.strip()[-2000:]}")
    progress(f"built base {tag} in {time.monotonic() - started:.0f} s")
    return tag, client.images.get(tag).id


def _run_as_group(cmd: list[str], grace: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` (output captured) in a process group of its own, which an interrupt of
    this process (Ctrl-C, KeyboardInterrupt) ends as a whole.

    ``subprocess.run`` kills only the child it started: build-base.sh's ``mmdebstrap | docker
    import`` then ran on orphaned and tagged a base behind the user's back (or beside the one
    a retry built). The group gets SIGINT, on which mmdebstrap removes its root folder and
    ``docker import`` drops the upload, then SIGKILL after ``grace`` seconds or a second
    interrupt.
    """
    import signal

    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          process_group=0) as proc:
        try:
            out, err = proc.communicate()
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                try:
                    proc.communicate(timeout=grace)  # until every member closed the pipes
                except BaseException:  # past the grace, or interrupted again
                    # Only then: once the group ended, its id may be another process's.
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    raise
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


# ---------------------------------------------------------------- env images

def env_code_missing(info: EnvInfo) -> str | None:
    """Why ``info``'s image cannot be built here, or None when it can.

    A built-in env needs its code in this checkout; a plugin env needs its package installed
    from a folder or wheel on this host (see :func:`plugin_source`).
    """
    module = info.entry_point.partition(":")[0]
    if not _is_builtin(info):
        try:
            plugin_source(info)
        except ProviderUnavailableError as exc:
            return str(exc)
    try:
        found = importlib.util.find_spec(module) is not None
    except ImportError:
        found = False
    if not found:
        return f"env {info.name!r} has no code here yet ({module} not found)"
    return None


def image_tag(info: EnvInfo, base: tuple[str, str], reqs: list[str] | None = None,
              src_hash: str | None = None, plugin: str | None = None) -> str:
    """The content-hashed tag of ``info``'s image on ``base`` (``(reference, id)``).

    Args:
        info: The catalog entry.
        base: The base image's ``(reference, id)``.
        reqs: Its requirements (default: :func:`requirements`).
        src_hash: openenv_gym's source hash (default: :func:`source_hash`).
        plugin: A plugin env's source hash (default: :func:`plugin_hash`).
    """
    reqs = requirements(info) if reqs is None else reqs
    plugin = plugin_hash(info) if plugin is None else plugin
    digest = _sha([_dockerfile().read_bytes(), base[0].encode(), base[1].encode(),
                   info.name.encode(), *(r.encode() for r in reqs),
                   (src_hash or source_hash()).encode(), *([plugin.encode()] if plugin else [])])
    return f"{IMAGE_REPO}/{info.name}:{digest[:12]}"


def find_image(client: Any, info: EnvInfo) -> str | None:
    """The tag of ``info``'s current image when it is present (no build, no pull)."""
    import docker.errors

    base = _present_base(client)
    if base is None or build_problem() or env_code_missing(info):
        return None
    tag = image_tag(info, base)
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    return tag


def build_image(client: Any, info: EnvInfo, progress: Progress = lambda _: None,
                no_cache: bool = False) -> BuildResult:
    """Build ``info``'s image unless one with the same inputs exists.

    Args:
        client: A ``docker.DockerClient``.
        info: The catalog entry.
        progress: Called with short status lines (for a progress display).
        no_cache: Rebuild every layer.

    Returns:
        The :class:`BuildResult`.

    Raises:
        ProviderUnavailableError: The env has no code here (or a plugin env no source on
            this host), wheels or base cannot be had, or the Docker build failed (with the
            failing step's output).
    """
    _require_build_inputs()  # before pulling or building a base image this build could not use
    missing = env_code_missing(info)
    if missing:
        raise ProviderUnavailableError(missing)
    import docker.errors

    # Threads of one provider starting n workers build once.
    with _build_lock, _engine_failures(info.name):
        started = time.monotonic()
        base = ensure_base(client, progress)
        reqs = requirements(info)
        src = source_hash()
        plugin = plugin_hash(info)
        tag = image_tag(info, base, reqs, src, plugin)
        # Two trainers (or a trainer and `openenv-gym build`) that miss the same image at
        # once: the second waits for the first's build and then finds the image, instead of
        # building it again beside it (twice the time on a shared machine, and a dangling
        # copy of every layer left behind that `build --prune` never removes).
        with _tag_lock(tag, progress):
            if not no_cache:
                try:
                    image = client.images.get(tag)
                    return BuildResult(info.name, tag, image.attrs.get("Size", 0), 0.0, False)
                except docker.errors.ImageNotFound:
                    pass
            deps = _download_wheels(reqs, progress)
            own = [_build_self_wheel(src, progress)]
            if plugin:  # a plugin's wheel joins openenv_gym's: the Dockerfile installs both
                own.append(_plugin_wheel(info, plugin, progress))
            with _scratch() as scratch, tempfile.TemporaryDirectory(prefix="ctx-", dir=scratch) as ctx:
                shutil.copy2(_dockerfile(), Path(ctx) / "Dockerfile")
                _link_tree(deps, Path(ctx) / "deps")
                for folder in own:
                    _link_tree(folder, Path(ctx) / "self")
                _docker_build(client, ctx, tag, base[0], info.name, no_cache, progress)
            image = client.images.get(tag)
            return BuildResult(info.name, tag, image.attrs.get("Size", 0),
                               time.monotonic() - started, True)


@contextlib.contextmanager
def _engine_failures(env: str) -> Iterator[None]:
    """Turn the Docker engine failing mid-build (stopped or crashed: the build's stream cut
    off; refusing a request) into a :class:`ProviderUnavailableError` that says what to do.

    The build is the longest the trainer talks to the engine (a minute and more on a first
    run): an engine that died in it raised urllib3's bare ``ProtocolError`` out of
    ``gym.make``, and ``openenv-gym build`` a traceback.
    """
    import docker.errors
    import requests.exceptions
    import urllib3.exceptions

    try:
        yield
    except (docker.errors.DockerException, requests.exceptions.RequestException,
            urllib3.exceptions.HTTPError) as exc:
        raise ProviderUnavailableError(
            f"the Docker engine failed while building the image of env {env!r} "
            f"({type(exc).__name__}: {str(exc)[:300]}); check that it runs and has disk space "
            f"(`docker info`, `docker system df`), then build again: `openenv-gym build {env}`"
        ) from None


@contextlib.contextmanager
def _tag_lock(tag: str, progress: Progress) -> Iterator[None]:
    """Hold the host-wide lock on building ``tag`` (a file lock in :func:`cache_dir`, released
    by the kernel when its holder dies, even by SIGKILL)."""
    import fcntl

    folder = cache_dir() / "locks"
    try:  # the first write of a build into the cache
        folder.mkdir(parents=True, exist_ok=True)
        lock = open(folder / (re.sub(r"[^A-Za-z0-9_.-]", "_", tag) + ".lock"), "a")
    except OSError as exc:  # was a bare FileNotFoundError/PermissionError traceback
        raise ProviderUnavailableError(
            f"cannot write the image build cache {cache_dir()} ({exc.strerror or exc}): set "
            "OPENENV_GYM_CACHE to a folder you can write") from None
    with lock as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"waiting for another process that builds {tag}")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def _scratch() -> Iterator[str]:
    """A folder of this process's in the runtime folder (``<pid>-build-<id>``, with its owner
    file) for a build's scratch copies: the build context (wheels, ~25 MB to hundreds) and
    the staged source. A trainer killed mid-build (SIGKILL, or SIGTERM, which Python does not
    turn into an exception) leaves it to the sweep of dead owners' folders, where a
    ``$TMPDIR/openenv-gym-ctx-*`` folder stayed for good."""
    from openenv_gym.providers._runtime import make_owned_folder, remove_folder, runtime_dir

    # A folder per build: two threads may build images at once.
    folder = os.path.join(runtime_dir(), f"{os.getpid()}-build-{secrets.token_hex(4)}")
    make_owned_folder(folder)
    try:
        yield folder
    finally:
        remove_folder(folder)


def _link_tree(src: Path, dest: Path) -> None:
    dest.mkdir(exist_ok=True)
    for path in src.iterdir():
        try:
            os.link(path, dest / path.name)
        except OSError:  # another file system: copy
            shutil.copy2(path, dest / path.name)


def _docker_build(client: Any, ctx: str, tag: str, base: str, env: str, no_cache: bool,
                  progress: Progress) -> None:
    # The classic builder (docker-py's API) builds FROM a local tag without any pull attempt.
    stream = client.api.build(path=ctx, tag=tag, buildargs={"BASE_IMAGE": base, "ENV_NAME": env},
                              labels={LABEL_PROJECT: "1"}, rm=True, forcerm=True, pull=False,
                              nocache=no_cache, decode=True)
    tail: list[str] = []
    for chunk in stream:
        if "error" in chunk:
            raise ProviderUnavailableError(
                f"docker build of {tag} failed: {chunk['error'].strip()}\n" + "".join(tail[-30:]))
        text = chunk.get("stream", "")
        if text:
            tail.append(text)
            line = text.strip()
            if line.startswith("Step "):
                progress(line[:100])


def prune_old(client: Any, info: EnvInfo, keep: str) -> list[str]:
    """Remove older tags of ``info``'s image; returns the removed tags.

    Not done by builds themselves: another process may be about to start a container from
    an older tag (old tags share every layer but the last, small one).
    """
    import docker.errors

    removed: list[str] = []
    for image in client.images.list(name=f"{IMAGE_REPO}/{info.name}"):
        for tag in image.tags:
            if tag != keep and tag.startswith(f"{IMAGE_REPO}/{info.name}:"):
                try:
                    client.images.remove(tag)
                    removed.append(tag)
                except docker.errors.APIError:
                    pass  # in use or already gone
    return removed
