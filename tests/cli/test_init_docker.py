"""``openenv-gym init`` on Docker: scaffold -> pip install -e -> ``openenv-gym build`` ->
``gym.make(..., provider="docker")`` runs it in a hardened container -> close leaves nothing.

One image build (the plugin's layers on top of cached dependency layers and wheels); the image
is removed afterwards.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.cli.cli_helpers import ENV, SCAFFOLD_EPISODE, run
from tests.conftest import require_docker

pytestmark = pytest.mark.docker

NAME = "scaffold_dock"
GYM_ID = "OpenEnv/ScaffoldDock-v0"

# auto_build=False: the image `openenv-gym build` made must be found, not built again.
SCRIPT = f"""
import os, docker, gymnasium as gym, openenv_gym
from openenv_gym.providers._docker_owner import LABEL_ENV, LABEL_OWNER_PID, project_filter

client = docker.from_env()
env = gym.make("{GYM_ID}", provider="docker", provider_options={{"auto_build": False}})
""" + SCAFFOLD_EPISODE + f"""
[c] = client.containers.list(ignore_removed=True, filters=project_filter(**{{LABEL_ENV: "{NAME}",
                                                         LABEL_OWNER_PID: str(os.getpid())}}))
host = c.attrs["HostConfig"]
print("CONTAINER", c.attrs["Config"]["Image"], c.attrs["Config"]["User"], host["NetworkMode"],
      host["ReadonlyRootfs"], ",".join(host["CapDrop"] or []))
env.close()
left = client.containers.list(all=True, ignore_removed=True, filters=project_filter(**{{LABEL_ENV: "{NAME}"}}))
print("LEFT", len(left))
"""


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
                          capture_output=True, text=True, timeout=300)


def _cleanup() -> None:
    import docker

    from openenv_gym.providers._docker_owner import LABEL_ENV, project_filter

    client = docker.from_env()
    try:
        for c in client.containers.list(all=True, ignore_removed=True, filters=project_filter(**{LABEL_ENV: NAME})):
            c.remove(force=True)
        for image in client.images.list(name=f"openenv-gym/{NAME}"):
            for tag in image.tags:
                client.images.remove(tag, force=True)
    finally:
        client.close()


@pytest.mark.timeout(900)
def test_init_install_build_make_step_on_docker(tmp_path) -> None:
    require_docker()
    out = run("init", NAME, "--dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    root = tmp_path / NAME
    # One route to an image: openenv-gym build. The scaffold carries no Dockerfile of its own.
    assert not (root / "Dockerfile").exists()
    assert f"openenv-gym build {NAME}" in (root / "README.md").read_text()

    installed = _pip("install", "--no-deps", "--no-build-isolation", "-e", str(root))
    assert installed.returncode == 0, installed.stderr
    try:
        built = run("build", NAME, timeout=600)
        assert built.returncode == 0, built.stdout + built.stderr
        match = re.search(rf"openenv-gym/{NAME}:[0-9a-f]{{12}}", built.stdout)
        assert match, built.stdout
        tag = match.group(0)
        images = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}",
                                 f"openenv-gym/{NAME}"], capture_output=True, text=True, timeout=60)
        assert tag in images.stdout.split(), images.stdout

        # The same inputs give the same tag: a second build is a no-op.
        again = run("build", NAME, timeout=300)
        assert again.returncode == 0 and tag in again.stdout and "up to date" in again.stdout, \
            again.stdout + again.stderr

        # From another folder: the package is found through its installed entry point only.
        made = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path.parent,
                              capture_output=True, text=True, timeout=300, env=ENV)
        assert made.returncode == 0, made.stdout + made.stderr
        container = re.search(r"^CONTAINER (\S+) (\S+) (\S+) (\S+) (\S+)$", made.stdout, re.M)
        assert container, made.stdout
        image, user, network, read_only, cap_drop = container.groups()
        assert image == tag
        assert not user.startswith(("0", "root")) and network == "none" and read_only == "True"
        assert "ALL" in cap_drop.split(",")
        assert "LEFT 0" in made.stdout, made.stdout

        # A change to the plugin's source gives a new tag (its source is part of the hash).
        env_py = root / NAME / "env.py"
        env_py.write_text(env_py.read_text() + "\n# edited\n")
        listed = subprocess.run(
            [sys.executable, "-c", "import docker; from openenv_gym.catalog import get_env_info; "
             "from openenv_gym.providers._docker_images import find_image; "
             f"print(find_image(docker.from_env(), get_env_info({NAME!r})))"],
            cwd=tmp_path.parent, capture_output=True, text=True, timeout=120, env=ENV)
        assert listed.returncode == 0 and listed.stdout.strip() == "None", \
            listed.stdout + listed.stderr
    finally:
        assert _pip("uninstall", "-y", NAME.replace("_", "-")).returncode == 0
        _cleanup()


def test_plugin_without_source_on_this_host_gets_a_typed_error_naming_the_fix(tmp_path) -> None:
    require_docker()
    name = "scaffold_nosrc"
    assert run("init", name, "--dir", str(tmp_path)).returncode == 0
    wheels = tmp_path / "wheels"
    made = _pip("wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(wheels),
                str(tmp_path / name))
    assert made.returncode == 0, made.stderr
    [wheel] = wheels.glob("*.whl")
    assert _pip("install", "--no-deps", str(wheel)).returncode == 0
    wheel.unlink()  # installed from a wheel that is gone: nothing on this host to build from
    try:
        built = run("build", name, timeout=300)
        assert built.returncode == 1 and "failed" in built.stdout, built.stdout + built.stderr
        script = (
            "import gymnasium as gym, openenv_gym\n"
            "try:\n"
            "    gym.make('OpenEnv/ScaffoldNosrc-v0', provider='docker')\n"
            "except openenv_gym.errors.ProviderUnavailableError as exc:\n"
            "    print('ERROR', exc)\n")
        out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path.parent,
                             capture_output=True, text=True, timeout=120, env=ENV)
        assert out.returncode == 0, out.stderr
        assert "ERROR" in out.stdout and "pip install -e PATH" in out.stdout, out.stdout
        assert "provider_options={'image': TAG}" in out.stdout, out.stdout
        assert "openenv-gym build" not in out.stdout.split("ERROR", 1)[1], out.stdout
        # The worker never started: no container of this env.
        listed = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=openenv-gym.env={name}"],
                                capture_output=True, text=True, timeout=60)
        assert listed.stdout.strip() == ""
    finally:
        assert _pip("uninstall", "-y", name.replace("_", "-")).returncode == 0
