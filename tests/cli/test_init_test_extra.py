"""``init``'s install instructions bring pytest: openenv-gym does not install it, and the
generated project's tests are the next thing they run."""

from __future__ import annotations

import tomllib

from tests.cli.cli_helpers import run


def test_next_steps_and_readme_install_the_test_extra_that_has_pytest(tmp_path) -> None:
    out = run("init", "extra_probe", "--dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    root = tmp_path / "extra_probe"
    # `pip install -e . && python -m pytest tests` failed in a fresh venv: No module named pytest.
    assert "pip install -e '.[test]' && python -m pytest tests" in out.stdout
    assert "pip install -e '.[test]'" in (root / "README.md").read_text()
    with open(root / "pyproject.toml", "rb") as f:
        extra = tomllib.load(f)["project"]["optional-dependencies"]["test"]
    assert any(req.startswith("pytest") for req in extra)

