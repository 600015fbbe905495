"""``openenv-gym init``: scaffold -> its own tests pass -> pip install -e -> gym.make -> step."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cli.cli_helpers import ENV, SCAFFOLD_EPISODE, run

def _script(provider: str) -> str:
    """A script that makes the installed scaffold env on ``provider`` and drives an episode."""
    return ("import gymnasium as gym, openenv_gym\n"
            f'env = gym.make("OpenEnv/ScaffoldProbe-v0", provider="{provider}")\n'
            + SCAFFOLD_EPISODE + 'env.close()\nprint("OK", env.spec.id if env.spec else "")\n')


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
                          capture_output=True, text=True, timeout=300)


def test_init_rejects_bad_names_and_existing_folders(tmp_path) -> None:
    for name in ("My-Env", "class", "echo", "json"):
        out = run("init", name, "--dir", str(tmp_path))
        assert out.returncode == 2 and "error:" in out.stderr, name
    (tmp_path / "taken" / "x").mkdir(parents=True)
    (tmp_path / "taken" / "x" / "f").write_text("")
    out = run("init", "taken", "--dir", str(tmp_path))
    assert out.returncode == 1 and "--force" in out.stderr


def test_init_under_python_m_takes_an_empty_folder_of_the_name_as_the_console_script_does(tmp_path) -> None:
    # `python -m` puts the current directory on sys.path, where the folder reads as a
    # namespace package: "a Python module named 'probe_env' is already importable here".
    (tmp_path / "probe_env").mkdir()
    out = run("init", "probe_env", cwd=tmp_path)  # (run is `python -m openenv_gym.cli`)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "probe_env" / "probe_env" / "__init__.py").is_file()
    # A module of that name that really imports from here is still refused.
    (tmp_path / "other_env.py").write_text("")
    out = run("init", "other_env", "--dir", str(tmp_path / "elsewhere"), cwd=tmp_path)
    assert out.returncode == 2 and "is already importable here" in out.stderr


@pytest.mark.parametrize("name, why", [
    ("echo_", "distribution name 'echo-' would not be a valid PEP 508 name"),
    ("my__env", "Gymnasium id OpenEnv/MyEnv-v0 would be that of 'my_env'"),
    ("echo", "an environment named 'echo' already exists"),
    ("markdown_it_py", "'markdown-it-py' of that name is installed"),  # rich's dependency
])
def test_init_refuses_names_that_clash_or_cannot_install_and_suggests_one(tmp_path, name, why) -> None:
    from openenv_gym.scaffold import check_name

    out = run("init", name, "--dir", str(tmp_path))
    assert out.returncode == 2 and why in out.stderr, out.stderr
    assert not (tmp_path / name).exists()
    suggestion = out.stderr.rsplit("e.g. ", 1)[1].split()[0]
    assert check_name(suggestion) is None, suggestion


def test_check_name_compares_the_derived_gym_id_with_every_env(monkeypatch) -> None:
    import openenv_gym.catalog as catalog
    from openenv_gym.scaffold import check_name

    plugins = (catalog.EnvInfo("x_1", "OpenEnv/X1-v0", "x_1.env:X1Env", "a plugin"),
               catalog.EnvInfo("foo", "OpenEnv/Bar-v0", "foo.env:BarEnv", "ids its own way"))
    monkeypatch.setattr(catalog, "all_envs", lambda: catalog.BUILTIN_ENVS + plugins)
    assert "OpenEnv/X1-v0, which environment 'x_1' already has" in check_name("x1")
    assert "environment 'foo' already has" in check_name("bar")
    assert check_name("bar").endswith("e.g. bar2")
    assert check_name("baz") is None


def test_generated_readme_links_nowhere_made_up(tmp_path) -> None:
    from openenv_gym.scaffold import create

    create("readme_probe", str(tmp_path))
    text = (tmp_path / "readme_probe" / "README.md").read_text()
    assert "github.com" not in text and "OpenEnv/ReadmeProbe-v0" in text


def test_generated_tests_skip_when_their_id_is_another_envs(tmp_path) -> None:
    """Registered is not installed: an id that runs another env must not count as this one."""
    assert run("init", "scaffold_twin", "--dir", str(tmp_path)).returncode == 0
    root = tmp_path / "scaffold_twin"
    (root / "conftest.py").write_text(  # the id taken by echo, as a clashing plugin would
        "import gymnasium as gym\nimport openenv_gym\n"
        "gym.register('OpenEnv/ScaffoldTwin-v0', entry_point='openenv_gym.client.env:RemoteEnv',"
        " kwargs={'env': 'echo'})\n")
    generated = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                               cwd=root, capture_output=True, text=True, timeout=300, env=ENV)
    assert generated.returncode == 0 and "4 passed, 2 skipped" in generated.stdout, generated.stdout


def test_init_install_make_step(tmp_path) -> None:
    out = run("init", "scaffold_probe", "--dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "OpenEnv/ScaffoldProbe-v0" in out.stdout
    root = tmp_path / "scaffold_probe"
    for rel in ("pyproject.toml", "README.md", "scaffold_probe/models.py",
                "scaffold_probe/env.py", "scaffold_probe/__init__.py", "tests/test_env.py"):
        assert (root / rel).is_file(), rel

    # Its own tests pass as generated (the remote ones skip until it is installed).
    generated = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                               cwd=root, capture_output=True, text=True, timeout=300, env=ENV)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    assert "4 passed, 2 skipped" in generated.stdout

    installed = _pip("install", "--no-deps", "--no-build-isolation", "-e", str(root))
    assert installed.returncode == 0, installed.stderr
    try:
        listed = run("list")
        assert "OpenEnv/ScaffoldProbe-v0" in listed.stdout
        generated = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                                   cwd=root, capture_output=True, text=True, timeout=300, env=ENV)
        assert generated.returncode == 0 and "6 passed" in generated.stdout, generated.stdout
        # From another folder: the package is found through its installed entry point only.
        made = subprocess.run([sys.executable, "-c", _script("process")],
                              cwd=tmp_path.parent, capture_output=True, text=True, timeout=300, env=ENV)
        assert made.returncode == 0 and "OK OpenEnv/ScaffoldProbe-v0" in made.stdout, made.stderr
        # From the folder `init` ran in (where its "next:" lines leave a user who did not cd, and
        # a notebook started there): the project folder scaffold_probe/ is importable from the
        # current folder too, and must not shadow the installed package (it did: setuptools'
        # editable hook for a flat layout comes after Python's path search, which made the
        # project folder an empty namespace package without env_info).
        made = subprocess.run([sys.executable, "-c", _script("process")],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300, env=ENV)
        assert made.returncode == 0 and "OK OpenEnv/ScaffoldProbe-v0" in made.stdout, made.stderr
        assert "failed to load" not in made.stderr, made.stderr
        # make_vec's max_episode_steps reaches the template's own limit (max_steps).
        limit = subprocess.run([sys.executable, "-c", "from openenv_gym.catalog import get_env_info; "
                                "print(get_env_info('scaffold_probe').time_limit_kwarg)"],
                               cwd=tmp_path.parent, capture_output=True, text=True, timeout=120, env=ENV)
        assert limit.stdout.strip() == "max_steps", limit.stdout + limit.stderr
    finally:
        assert _pip("uninstall", "-y", "scaffold-probe").returncode == 0


def test_an_env_name_with_a_trailing_newline_is_refused() -> None:
    # A regex's "$" matches before a final newline: `init $'name\n'` wrote a broken package.
    from openenv_gym import scaffold

    assert scaffold._problem("qa_text_env") is None
    assert scaffold._problem("qa_text_env\n") is not None
