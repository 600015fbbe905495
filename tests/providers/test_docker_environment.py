"""Numerics variables of the trainer (OpenBLAS core type, threads, numpy CPU features, hash
seed) reach docker workers as they reach process workers, so both providers compute alike."""

from __future__ import annotations

import pytest

from openenv_gym.providers.docker import with_numerics_environment
from tests.conftest import require_docker

ENVIRON = {"OPENBLAS_CORETYPE": "Haswell", "OMP_NUM_THREADS": "1", "NPY_DISABLE_CPU_FEATURES": "AVX512F",
           "PYTHONHASHSEED": "0", "HOME": "/root", "AWS_SECRET_ACCESS_KEY": "x"}


def test_only_numerics_variables_are_forwarded():
    options = with_numerics_environment({"user": "1:1"}, ENVIRON)
    assert options["environment"] == {"OPENBLAS_CORETYPE": "Haswell", "OMP_NUM_THREADS": "1",
                                      "NPY_DISABLE_CPU_FEATURES": "AVX512F", "PYTHONHASHSEED": "0"}


@pytest.mark.parametrize("given", [{"OMP_NUM_THREADS": "4", "X": "1"}, ["OMP_NUM_THREADS=4", "X=1"]])
def test_the_callers_environment_wins(given):
    env = with_numerics_environment({"environment": given}, ENVIRON)["environment"]
    pairs = dict(item.split("=", 1) for item in env) if isinstance(env, list) else env
    assert pairs["OMP_NUM_THREADS"] == "4" and pairs["X"] == "1" and pairs["OPENBLAS_CORETYPE"] == "Haswell"


def test_nothing_to_forward_leaves_the_options_alone():
    assert with_numerics_environment({"user": "1:1"}, {"HOME": "/root"}) == {"user": "1:1"}


@pytest.mark.docker
def test_a_docker_worker_gets_the_trainers_openblas_coretype(monkeypatch):
    require_docker()
    import docker

    from openenv_gym.providers.docker import DockerProvider

    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    p = DockerProvider()
    [w] = p.start("echo")
    try:
        client = docker.from_env()
        env = client.api.inspect_container(w.container_id)["Config"]["Env"]
        client.close()
        assert "OPENBLAS_CORETYPE=Haswell" in env
    finally:
        p.stop_all([w])
