"""Scaffolding for new environments: ``openenv-gym init NAME`` writes a working package.

The package has the standard layout (models, environment logic, catalog entry point, tests,
README) and passes its own tests as generated; after ``pip install -e`` it is
``gym.make("OpenEnv/<Camel>-v0")`` on every provider. It has no Dockerfile of its own: its
image is openenv_gym's shared one plus its package, built by ``openenv-gym build NAME``
(:mod:`openenv_gym.providers._docker_images`).

Example:
    >>> import tempfile
    >>> names("my_env")["gym_id"]
    'OpenEnv/MyEnv-v0'
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     written = create("my_env", tmp)
    >>> sorted(os.path.basename(p) for p in written)[:3]
    ['.gitignore', 'README.md', '__init__.py']
"""

from __future__ import annotations

import importlib.util
import keyword
import os
import re
import string

__all__ = ["create", "names", "check_name", "TEMPLATES"]

TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")

#: Output path (relative to the new project, ``{package}`` substituted) -> template file.
TEMPLATES: dict[str, str] = {
    "pyproject.toml": "pyproject.toml.tmpl",
    "README.md": "README.md.tmpl",
    ".gitignore": "gitignore.tmpl",
    "{package}/__init__.py": "init.py.tmpl",
    "{package}/models.py": "models.py.tmpl",
    "{package}/env.py": "env.py.tmpl",
    "tests/test_env.py": "test_env.py.tmpl",
}

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")


def names(name: str) -> dict[str, str]:
    """Every name derived from ``name`` (``my_env``): package, class stem, Gymnasium id, dist.

    Example:
        >>> names("grid_world")["camel"], names("grid_world")["dist"]
        ('GridWorld', 'grid-world')
    """
    camel = "".join(part.capitalize() for part in name.split("_") if part)
    return {"name": name, "package": name, "camel": camel, "gym_id": f"OpenEnv/{camel}-v0",
            "dist": name.replace("_", "-")}


def check_name(name: str) -> str | None:
    """Why ``name`` cannot name a new env package, or None when it can."""
    from openenv_gym.catalog import all_envs

    if not _NAME.match(name):
        return (f"{name!r} is not a valid name: use lowercase letters, digits and underscores, "
                "starting with a letter (it becomes the Python package name), e.g. my_env")
    if keyword.iskeyword(name):
        return f"{name!r} is a Python keyword"
    if any(info.name == name for info in all_envs()):
        return f"an environment named {name!r} already exists (see `openenv-gym list`)"
    if importlib.util.find_spec(name) is not None:
        return f"a Python module named {name!r} is already importable here; pick another name"
    return None


def create(name: str, dest: str, force: bool = False) -> list[str]:
    """Write the package for env ``name`` into ``dest/name``.

    Args:
        name: The env's short name and package name (``"my_env"``).
        dest: The folder to create the project in.
        force: Overwrite files of an existing project folder.

    Returns:
        The paths written.

    Raises:
        ValueError: The name is not usable (the message says why).
        FileExistsError: ``dest/name`` exists and is not empty (and ``force`` is off).
    """
    problem = check_name(name)
    if problem:
        raise ValueError(problem)
    root = os.path.join(dest, name)
    if os.path.isdir(root) and os.listdir(root) and not force:
        raise FileExistsError(f"{root} exists and is not empty; pick another folder or --force")
    values = names(name)
    written = []
    for out, template in TEMPLATES.items():
        path = os.path.join(root, out.format(**values))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(os.path.join(TEMPLATE_DIR, template), encoding="utf-8") as f:
            text = string.Template(f.read()).substitute(values)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)
    return written
