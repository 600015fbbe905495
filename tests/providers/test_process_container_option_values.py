"""The process provider reads ``container_options`` (the docker provider's keys) for an
untrusted env's cgroup and private tmpfs as docker-py reads them, and refuses a value it
cannot read with a ValueError (InvalidRequestError) naming the key: ``mem_limit="lots"`` was
``int()``'s bare "invalid literal", -5 the kernel's EINVAL, ``tmpfs="x"`` an AttributeError,
``"512MB"`` (which docker-py takes) a bare ValueError, and ``pids_limit=-1`` (no limit to
Docker) EINVAL."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import InvalidRequestError
from openenv_gym.providers._cgroup import limits
from openenv_gym.providers._tmpfs import spec_for_env


@pytest.mark.parametrize("value", ["lots", "", "1x", -5, float("nan"), True, [1]])
def test_a_mem_limit_docker_cannot_read_is_refused_by_name(value: object) -> None:
    with pytest.raises(InvalidRequestError, match=r"container_options\['mem_limit'\] must be a number of bytes"):
        limits({"mem_limit": value})


@pytest.mark.parametrize("value", ["x", "128", 1.5, True])
def test_a_pids_limit_that_is_no_whole_number_is_refused_by_name(value: object) -> None:
    with pytest.raises(InvalidRequestError, match=r"container_options\['pids_limit'\] must be a whole number"):
        limits({"pids_limit": value})


@pytest.mark.parametrize("options, expected", [
    ({"mem_limit": "512MB", "pids_limit": 64}, (64, 512 << 20)),   # docker-py's "MB"
    ({"mem_limit": "1g"}, (None, 1 << 30)),
    ({"mem_limit": 1.5e9}, (None, 1_500_000_000)),
    ({"mem_limit": 0, "pids_limit": 0}, (None, None)),
    ({"pids_limit": -1}, (None, None)),                             # Docker: no limit
])
def test_limits_are_read_as_docker_reads_them(options, expected) -> None:
    assert limits(options) == expected


@pytest.mark.parametrize("tmpfs", ["x", {"/tmp": 64}, [1]])
def test_a_tmpfs_that_maps_no_folder_to_options_is_refused_by_name(tmpfs: object) -> None:
    with pytest.raises(InvalidRequestError, match=r"container_options\['tmpfs'\] must map each folder"):
        spec_for_env("coding", {"tmpfs": tmpfs})


def test_docker_py_s_list_form_of_tmpfs_is_read() -> None:
    assert spec_for_env("coding", {"tmpfs": ["/workspace", "/tmp:size=1g"]}) in ("size=1g", None)  # None: cannot mount here


def test_gym_make_names_the_bad_value() -> None:
    with pytest.raises(ValueError, match=r"container_options\['mem_limit'\]"):
        gym.make("OpenEnv/Coding-v0", provider="process",
                 provider_options={"container_options": {"mem_limit": "lots"}})
