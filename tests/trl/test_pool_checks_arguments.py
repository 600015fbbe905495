"""EnvPool checks its arguments when made, with the package's typed errors (tests/trl/)."""

from __future__ import annotations

import pytest

from openenv_gym.errors import InvalidRequestError
from openenv_gym.trl.outcome import FailurePolicy


@pytest.mark.parametrize("reward", ["bad", {"timeout": "x"}, [1.0]])
def test_a_failure_reward_that_is_no_number_is_refused_when_made(reward) -> None:
    # It was accepted, and the first failed episode raised ValueError out of pool.run.
    with pytest.raises(InvalidRequestError, match="failure_reward"):
        FailurePolicy(reward)


def test_good_failure_rewards_still_work() -> None:
    assert FailurePolicy(None).reward_for("crash") is None
    assert FailurePolicy({"timeout": -1, "crash": None}).reward_for("timeout") == -1.0


def test_pool_arguments_are_typed_errors_and_numpy_ints_count() -> None:
    import numpy as np

    from openenv_gym.trl import EnvPool

    with pytest.raises(InvalidRequestError, match="episode_timeout"):
        EnvPool("echo", 1, provider="process", episode_timeout=float("nan"))
    with pytest.raises(InvalidRequestError, match="failure_reward"):
        EnvPool("echo", 1, provider="process", failure_reward="bad")
    with EnvPool("echo", np.int64(1), provider="process", max_steps=np.int64(3)) as pool:
        assert pool.num_workers == 1
