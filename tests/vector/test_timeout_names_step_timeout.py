"""A vector env's step timeout tells the caller to raise ``step_timeout=``, the name its
constructor (and ``gym.make_vec``) takes: ``timeout=`` is a single env's, and given to
``make_vec`` it would not reach the vector env."""

from __future__ import annotations

import numpy as np
import pytest

from openenv_gym.errors import WorkerTimeoutError
from openenv_gym.vector import RemoteVectorEnv
from tests.vector.vector_helpers import freeze_worker


def test_a_hung_worker_s_timeout_names_step_timeout() -> None:
    envs = RemoteVectorEnv(2, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=1,
                           on_worker_error="raise", step_timeout=2)
    try:
        envs.reset(seed=0)
        freeze_worker(envs.workers[1])
        with pytest.raises(WorkerTimeoutError, match=r"raise step_timeout=\.\.\. if the env is slow"):
            envs.step(np.zeros(2, dtype=np.int64))
    finally:
        envs.close()
