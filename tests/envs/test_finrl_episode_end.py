"""FinRL-v0 past its last day: the caller's error (reset needed), locally and served."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stockstats")

from openenv_gym.envs.finrl.env import FinRLEnv  # noqa: E402
from openenv_gym.errors import ResetNeededError  # noqa: E402
from openenv_gym.server.service import EnvService  # noqa: E402
from tests.envs.test_finrl_accounting import write_csv  # noqa: E402


def test_stepping_past_the_last_day_needs_a_reset(tmp_path) -> None:
    path = write_csv(tmp_path / "small.csv")
    env = FinRLEnv(split=None, data_path=path, indicators=("macd",))
    env.reset(seed=0)
    hold = np.zeros(2, np.float32)
    while not env.step(hold)[2]:
        pass
    with pytest.raises(ResetNeededError, match="last day"):  # a 4xx, not an env bug (500)
        env.step(hold)
    service = EnvService(lambda: FinRLEnv(split=None, data_path=path, indicators=("macd",)),
                         idle_timeout=None)
    try:
        sid = service.reset()["sid"]
        steps = [service.handle({"op": "step", "sid": sid, "action": hold}) for _ in range(4)]
        assert [s.get("terminated") for s in steps[:3]] == [False, False, True]
        assert steps[3]["error"]["type"] == "ResetNeededError"
        assert "ended at step 3" in steps[3]["error"]["message"]
    finally:
        service.shutdown()
