"""`openenv-gym init tests` would put the package in the project's tests/ folder."""

from openenv_gym.scaffold import check_name


def test_a_name_of_the_projects_own_folder_is_refused() -> None:
    assert "tests/ folder" in (check_name("tests") or "")
