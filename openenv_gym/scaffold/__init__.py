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

import importlib.metadata
import importlib.util
import keyword
import os
import re
import string

__all__ = ["create", "names", "check_name", "suggest_name", "TEMPLATES"]

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

#: Lowercase words joined by single underscores. A trailing ``_`` would give a distribution
#: name ending in ``-`` (not valid PEP 508: ``pip install`` refuses it), and ``__`` the same
#: Gymnasium id as one ``_`` (``my__env`` and ``my_env`` are both ``OpenEnv/MyEnv-v0``).
_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")  # fullmatch: "$" matches before "\n"
_MAX_LENGTH = 41


def names(name: str) -> dict[str, str]:
    """Every name derived from ``name`` (``my_env``): package, class stem, Gymnasium id, dist.

    Example:
        >>> names("grid_world")["camel"], names("grid_world")["dist"]
        ('GridWorld', 'grid-world')
    """
    camel = "".join(part.capitalize() for part in name.split("_") if part)
    return {"name": name, "package": name, "camel": camel, "gym_id": f"OpenEnv/{camel}-v0",
            "dist": name.replace("_", "-")}


def _importable(name: str) -> bool:
    """Whether ``name`` imports as a module here. A plain folder of that name in the current
    directory does not count: ``python -m`` puts the directory on ``sys.path``, where the
    folder (the project folder ``init`` makes, perhaps) reads as a namespace package, and
    ``python -m openenv_gym init NAME`` refused what ``openenv-gym init NAME`` made."""
    spec = importlib.util.find_spec(name)
    if spec is None:
        return False
    here = os.path.realpath(os.getcwd())
    locations = list(spec.submodule_search_locations or [])
    namespace = spec.origin in (None, "namespace")
    return not (namespace and locations
                and all(os.path.dirname(os.path.realpath(p)) == here for p in locations))


def _problem(name: str) -> str | None:
    """Why ``name`` cannot name a new env package (without a suggestion), or None."""
    from openenv_gym.catalog import ENTRY_POINT_GROUP, all_envs

    if len(name) > _MAX_LENGTH or not _NAME.fullmatch(name):
        reasons = []
        if name.endswith("_"):
            reasons.append(f"its distribution name {names(name)['dist']!r} would not be a valid "
                           "PEP 508 name, which pip refuses")
        cleaned = re.sub("_+", "_", name).strip("_")
        if cleaned != name and _NAME.fullmatch(cleaned):
            reasons.append(f"its Gymnasium id {names(name)['gym_id']} would be that of {cleaned!r}")
        why = f" ({'; '.join(reasons)})" if reasons else ""
        return (f"{name!r} is not a valid name{why}: use lowercase words of letters and digits "
                f"joined by single underscores, starting with a letter, up to {_MAX_LENGTH} "
                "characters (it names the Python package, the distribution and the Gymnasium id)")
    if keyword.iskeyword(name):
        return f"{name!r} is a Python keyword"
    folders = {out.split("/")[0] for out in TEMPLATES if "/" in out} - {"{package}"}
    if name in folders:
        # The package would share that folder: its tests inside the package, and a plugin
        # that openenv_gym loads while `import tests` is still running (it then fails).
        return f"{name!r} is the name of the project's own {name}/ folder"
    derived = names(name)
    for info in all_envs():
        if info.name == name:
            return f"an environment named {name!r} already exists (see `openenv-gym list`)"
        if info.gym_id == derived["gym_id"]:
            # One id, two envs: gym.make would run whichever registered first.
            return (f"{name!r} gives the Gymnasium id {derived['gym_id']}, which environment "
                    f"{info.name!r} already has (see `openenv-gym list`)")
    if _importable(name):
        return f"a Python module named {name!r} is already importable here"
    try:
        dist = importlib.metadata.distribution(derived["dist"])
    except importlib.metadata.PackageNotFoundError:
        return None
    # `pip install -e .` would replace that installed distribution (an env plugin or not).
    plugin = any(ep.group == ENTRY_POINT_GROUP for ep in dist.entry_points)
    return (f"{name!r} gives the distribution name {derived['dist']!r}, and "
            f"{'the env plugin' if plugin else 'a package'} {dist.metadata['Name']!r} of that "
            "name is installed here")


def suggest_name(name: str) -> str:
    """A usable name close to ``name``: cleaned up, then numbered until nothing has it.

    Example:
        >>> suggest_name("Grid__World_")
        'grid_world'
        >>> suggest_name("echo")
        'echo2'
    """
    base = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")[:_MAX_LENGTH - 3] or "env"
    if not base[0].isalpha():
        base = f"env_{base}"
    candidates = [base] + [f"{base}{n}" for n in range(2, 100)]
    return next((c for c in candidates if _problem(c) is None), "my_env")


def check_name(name: str) -> str | None:
    """Why ``name`` cannot name a new env package, with a name that can; None when it can.

    Example:
        >>> check_name("class")
        "'class' is a Python keyword; e.g. class2"
    """
    problem = _problem(name)
    return f"{problem}; e.g. {suggest_name(name)}" if problem else None


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
        NotADirectoryError: ``dest/name`` exists and is no folder (``force`` cannot help).
        OSError: ``dest`` cannot be made or written to (a file, a read-only place).
    """
    problem = check_name(name)
    if problem:
        raise ValueError(problem)
    root = os.path.join(dest, name)
    if os.path.lexists(root) and not os.path.isdir(root):
        # Its own error: overwriting project files (--force) would not remove it.
        raise NotADirectoryError(f"{root} exists and is not a folder; remove it or pick another folder")
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
