"""Every docstring example in the package runs and shows what it says (the examples are the
first code a newcomer copies)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from tests.conftest import require_docker

PACKAGE = Path(__file__).resolve().parent.parent / "openenv_gym"
#: Modules whose examples start Docker workers.
NEEDS_DOCKER = {"openenv_gym.providers.docker", "openenv_gym.providers._docker_images"}


def _modules_with_examples() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if ">>>" in path.read_text(encoding="utf-8"):
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


@pytest.mark.parametrize("name", _modules_with_examples())
def test_docstring_examples_run(name: str) -> None:
    if name in NEEDS_DOCKER:
        require_docker()
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed (output above)"
