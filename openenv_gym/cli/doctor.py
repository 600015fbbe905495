"""``openenv-gym doctor``: what is installed and reachable here, what can run, and how to fix the rest.

Every check gives a status (``ok``, ``warn``: something optional is missing, ``fail``: the core
cannot work) and, when not ok, the exact command or step that fixes it. The exit code is 1
when any check fails, else 0 (missing extras and engines are warnings).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
from dataclasses import asdict, dataclass
from typing import Callable

from rich.markup import escape
from rich.table import Table

from openenv_gym.cli._args import exit_codes, port
from openenv_gym.cli._ui import FAILED, OK, bind_problem, console

__all__ = ["register", "Check", "run_checks"]

#: Optional packages no env names -> (import name, extra that installs it, what it enables).
#: The envs' own packages come from the catalog (``EnvInfo.modules``, :func:`_env_packages`).
OPTIONAL_PACKAGES = {
    "docker": ("docker", "docker", "the docker provider"),
    "ray": ("ray", "ray", "the ray provider"),
    "stable-baselines3": ("stable_baselines3", "sb3", "openenv_gym.sb3 (RemoteVecEnv)"),
}


def _core_packages() -> tuple[str, ...]:
    """Packages ``import openenv_gym`` and every worker need: setup.cfg's ``install_requires``,
    as the installed distribution records it (the one list of them)."""
    try:
        requires = importlib.metadata.requires("openenv-gym") or []
    except importlib.metadata.PackageNotFoundError:
        return ()
    return tuple(re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0] for req in requires
                 if "extra ==" not in req)


def _env_packages() -> dict[str, tuple[str, str | None, str]]:
    """Each catalog env's worker modules, as :data:`OPTIONAL_PACKAGES` rows (a module that is
    not installed goes by its import name); an optional one names the use that needs it."""
    from openenv_gym.catalog import all_envs

    dists = importlib.metadata.packages_distributions()
    out: dict[str, tuple[str, str | None, str]] = {}
    for info in all_envs():
        needs = [(m, info.gym_id) for m in info.modules]
        needs += [(m, f"{use} of {info.gym_id}") for m, use in info.optional_modules.items()]
        for module, enables in needs:
            dist = (dists.get(module) or [module])[0]
            out.setdefault(dist, (module, info.extra, enables))
    return out

STATUS_STYLE = {"ok": "[green]ok[/green]", "warn": "[yellow]warn[/yellow]", "fail": "[red]fail[/red]"}


@dataclass
class Check:
    """One finding.

    Args:
        area: What was checked (``"python"``, ``"package numpy"``, ``"docker engine"``...).
        status: ``"ok"``, ``"warn"`` or ``"fail"``.
        detail: What was found.
        fix: How to fix it (empty when ok).
    """

    area: str
    status: str
    detail: str
    fix: str = ""


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


#: The oldest Python openenv_gym runs on (``python_requires`` in setup.cfg).
MIN_PYTHON = (3, 11)


def check_python() -> list[Check]:
    """The interpreter's version."""
    v = sys.version_info
    text = f"{v.major}.{v.minor}.{v.micro} at {sys.executable}"
    if v < MIN_PYTHON:
        return [Check("python", "fail", text, "install Python {}.{} or newer (the floor of setup.cfg's "
                      "python_requires)".format(*MIN_PYTHON))]
    return [Check("python", "ok", text)]


def check_packages() -> list[Check]:
    """Core packages (must be present) and optional ones (each enables something)."""
    out = []
    for dist in _core_packages():
        version = _version(dist)
        out.append(Check(f"package {dist}", "ok", version) if version else
                   Check(f"package {dist}", "fail", "not installed", "pip install -e . (or pip install openenv-gym)"))
    for dist, (module, extra, enables) in {**OPTIONAL_PACKAGES, **_env_packages()}.items():
        version = _version(dist)
        if version and importlib.util.find_spec(module) is not None:
            out.append(Check(f"package {dist}", "ok", f"{version} ({enables})"))
        else:
            out.append(Check(f"package {dist}", "warn", f"not installed: needed for {enables}",
                             f"pip install 'openenv-gym[{extra}]'" if extra else f"install {dist}"))
    return out


def check_runtime_dir() -> list[Check]:
    """The process provider's folder for sockets and logs must be writable, and short enough
    for a worker's socket path."""
    from openenv_gym.errors import ProviderUnavailableError
    from openenv_gym.providers._runtime import check_socket_path, runtime_dir

    try:
        path = runtime_dir()
        probe = os.path.join(path, f".doctor-{os.getpid()}")
        with open(probe, "w"):
            pass
        os.unlink(probe)
        # A worker's socket as a pool names it (pid, a default pool name, worker number).
        check_socket_path(os.path.join(path, f"{os.getpid()}-p{'0' * 9}", "w99.sock"))
    except OSError as exc:
        return [Check("runtime folder", "fail", str(exc),
                      "set TMPDIR to a writable folder (workers keep sockets and logs there)")]
    except ProviderUnavailableError as exc:  # too long a path, or a folder another user made
        return [Check("runtime folder", "fail", str(exc), "set TMPDIR to a private folder with a short path, "
                      "such as /tmp/<you>")]
    return [Check("runtime folder", "ok", path)]


def check_port(port: int = 8000) -> list[Check]:
    """Whether ``openenv-gym serve``'s default port is free on loopback."""
    if bind_problem("127.0.0.1", port) is not None:  # the bind test serve itself runs first
        return [Check(f"port {port}", "warn", "in use on 127.0.0.1",
                      f"`openenv-gym serve ENV --port N` with another N; `ss -ltnp | grep :{port}` shows who holds it")]
    return [Check(f"port {port}", "ok", "free on 127.0.0.1")]


def check_docker() -> list[Check]:
    """The docker SDK, the engine, and each env's image."""
    if importlib.util.find_spec("docker") is None:
        return [Check("docker engine", "warn", "docker SDK not installed",
                      "pip install 'openenv-gym[docker]'")]
    from openenv_gym.providers import provider_class

    try:
        ok, reason = provider_class("docker").available()
    except Exception as exc:  # the provider module itself may be missing in this checkout
        return [Check("docker engine", "warn", f"docker provider unavailable: {exc}",
                      "pip install 'openenv-gym[docker]'")]
    if not ok:
        return [Check("docker engine", "warn", f"not reachable: {reason}",
                      "start it: `sudo systemctl start docker` (or `sudo dockerd &`); check "
                      "`docker info`; set DOCKER_HOST if it listens elsewhere")]
    import docker

    client = docker.from_env()
    version = client.version().get("Version", "?")
    out = [Check("docker engine", "ok", f"{version}, storage {client.info().get('Driver', '?')}")]
    try:
        from openenv_gym.catalog import all_envs
        from openenv_gym.providers._docker_images import build_problem, env_code_missing, find_image

        problem = build_problem()
        if problem:  # no image tag can be computed: say why once, not per env
            out.append(Check("docker images", "warn", problem, "reinstall openenv-gym"))
            return out
        for info in all_envs():
            if env_code_missing(info):
                continue
            tag = find_image(client, info)
            out.append(Check(f"image {info.name}", "ok", tag) if tag else
                       Check(f"image {info.name}", "warn", "not built (first use builds it, slowly)",
                             f"openenv-gym build {info.name}"))
    except ImportError:
        out.append(Check("docker images", "warn", "this checkout has no image builder yet", ""))
    finally:
        client.close()
    return out


def check_ray() -> list[Check]:
    """Ray for the ray provider."""
    if importlib.util.find_spec("ray") is None:
        return [Check("ray", "warn", "not installed: no ray provider", "pip install 'openenv-gym[ray]'")]
    from openenv_gym.providers import provider_class

    try:
        ok, reason = provider_class("ray").available()
    except Exception as exc:
        return [Check("ray", "warn", f"ray provider unavailable: {exc}", "pip install 'openenv-gym[ray]'")]
    return [Check("ray", "ok", f"{_version('ray')}")] if ok else [Check("ray", "warn", reason, "")]


def check_landlock() -> list[Check]:
    """Whether untrusted children (Coding, Git) can be confined to their folders."""
    from openenv_gym.envs._confine import abi

    version = abi()
    if version < 1:
        return [Check("landlock", "warn", "not available: on the process provider, Coding and Git "
                      "commands can read and write whatever your user can",
                      "Linux 5.13+ with Landlock enabled (lsm=landlock), or use provider='docker'")]
    gaps = [what for need, what in ((4, "TCP stays open (needs Linux 6.7)"),
                                    (6, "signals to the worker are not scoped (needs Linux 6.12)"))
            if version < need]
    detail = f"ABI {version}: sandboxed code is held to its folder"
    return [Check("landlock", "warn" if gaps else "ok", "; ".join([detail, *gaps]),
                  "a newer kernel" if gaps else "")]


def check_cgroups() -> list[Check]:
    """Whether untrusted envs' process workers get Docker's pids and memory limits."""
    from openenv_gym.providers._cgroup import support

    ok, where = support()
    if ok:
        return [Check("worker cgroups", "ok", f"{where}: Coding and Git process workers get Docker's "
                      "pids and memory limits")]
    bounded = "" if os.geteuid() != 0 else ("; as root, a fork bomb in Coding or Git code on the process "
                                             "provider is bounded by nothing (root ignores RLIMIT_NPROC)")
    return [Check("worker cgroups", "warn", f"none: {where}{bounded}",
                  "run as root on cgroup v1 or at v2's root, or use provider='docker'")]


def check_private_tmp() -> list[Check]:
    """Whether untrusted envs' process workers get a private, size-limited temp folder."""
    from openenv_gym.providers._docker_hardening import HARDENING
    from openenv_gym.providers._tmpfs import support

    ok, why = support()
    if ok:
        return [Check("worker temp folder", "ok", "Coding and Git process workers keep their sandboxes "
                      f"in a private tmpfs ({HARDENING['tmpfs']['/tmp']})")]
    return [Check("worker temp folder", "warn", f"no private tmpfs ({why}): Coding and Git sandboxes on the "
                  "process provider are on your disk, each file bounded (16 MiB) but not their total",
                  "use provider='docker' (or run the trainer as root) for code you do not trust")]


def check_worker_start() -> list[Check]:
    """Whether process workers are forked (fast) or spawned."""
    from openenv_gym.providers import _forks

    if _forks.available():
        return [Check("worker start", "ok", "process workers are forked from a fork server "
                      "(tens of ms each instead of a Python start)")]
    return [Check("worker start", "warn", "process workers are spawned (~0.3 s each): no pidfds here",
                  "Linux 5.3+ forks them")]


def check_envs() -> list[Check]:
    """Which providers can run each env here."""
    from openenv_gym.catalog import all_envs
    from openenv_gym.cli.envs import missing_here, runnable_providers

    out = []
    for info in all_envs():
        provs = runnable_providers(info)
        missing, install = missing_here(info)
        # What only some uses need (Coding-v0's task mode): it runs without them.
        uses = [f"{use} needs {m}" for m, use in info.optional_modules.items()
                if importlib.util.find_spec(m) is None]
        if provs:
            detail = ", ".join(provs)
            fix = ""
            if missing:
                detail += f" (process/ray need {', '.join(missing)})"
                fix = f"{install} to run it outside Docker" if install else ""
            if uses:
                detail += f" ({'; '.join(uses)} outside Docker)"
                fix = fix or (f"pip install 'openenv-gym[{info.extra}]' for that" if info.extra else "")
            if info.untrusted and "docker" not in provs:
                status = "warn"
                detail += "; runs untrusted code without isolation here"
                fix = fix or "start a Docker engine to isolate it"
            else:
                status = "ok"
            out.append(Check(f"env {info.name}", status, detail, fix))
        else:
            out.append(Check(f"env {info.name}", "warn", f"no provider can run it (missing {', '.join(missing)})",
                             install))
    return out


CHECKS: tuple[Callable[..., list[Check]], ...] = (
    check_python, check_packages, check_runtime_dir, check_port, check_docker, check_ray, check_landlock,
    check_cgroups, check_private_tmp, check_worker_start, check_envs,
)


def run_checks(port: int = 8000) -> list[Check]:
    """Every check, in order; a check that crashes becomes a failed finding.

    Args:
        port: The HTTP port to check is free (``openenv-gym serve --port``).
    """
    out: list[Check] = []
    for check in CHECKS:
        try:
            out.extend(check(port) if check is check_port else check())
        except Exception as exc:  # doctor must report, not crash
            out.append(Check(check.__name__.removeprefix("check_"), "fail",
                             f"{type(exc).__name__}: {exc}", "report this as a bug"))
    return out


def _doctor(args: argparse.Namespace) -> int:
    with console.status("checking…") if not args.json else contextlib.nullcontext():
        checks = run_checks(args.port)
    failed = any(c.status == "fail" for c in checks)
    if args.json:
        console.print_json(json.dumps([asdict(c) for c in checks]))
        return FAILED if failed else OK
    table = Table(title="openenv-gym doctor")
    for col in ("check", "status", "found", "fix"):
        table.add_column(col, overflow="fold")
    for c in checks:
        table.add_row(escape(c.area), STATUS_STYLE[c.status], escape(c.detail), escape(c.fix))
    console.print(table)
    warns = sum(c.status == "warn" for c in checks)
    console.print(f"{len(checks)} checks: {sum(c.status == 'ok' for c in checks)} ok, "
                  f"{warns} warnings, {sum(c.status == 'fail' for c in checks)} failures")
    return FAILED if failed else OK


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``doctor``."""
    p = sub.add_parser("doctor", help="check Python, packages, Docker, Ray and what can run here",
                       description="Check what is installed and reachable, what each provider "
                                   "can run here, and print the fix for every problem.",
                       epilog=exit_codes("the core works (warnings allowed)",
                                         "something the core needs is missing"))
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.add_argument("--port", type=port, default=8000,
                   help="HTTP port you will serve on, checked to be free (default 8000)")
    p.set_defaults(handler=_doctor)
