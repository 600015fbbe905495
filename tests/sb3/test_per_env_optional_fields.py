"""RemoteVecEnv steps per-env Dict actions env by env, as DummyVecEnv does: env i's action is
checked as env i's own, so one env may leave out an optional field another sets (Coding-v0's
``timeout``). It refused such a batch ("env 1's action has no field 'timeout', which another
env's action has"), a check left from when per-env dicts were batched into one
``{field: per-env values}``, where a field goes to every env or to none."""

from __future__ import annotations

import pytest

pytest.importorskip("stable_baselines3")

from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402


def test_one_env_may_leave_out_an_optional_field_another_sets() -> None:
    venv = RemoteVecEnv("OpenEnv/Coding-v0", 2, provider="process")
    try:
        venv.reset()
        # Env 0's own timeout ends its sleep; env 1, without one, runs under Coding's default.
        obs, rewards, dones, _ = venv.step([{"code": "import time; time.sleep(30)", "timeout": 0.5},
                                            {"code": "print(2)"}])
        assert obs["timed_out"].tolist() == [1, 0]
        assert obs["stdout"][1] == "2\n"
        assert not dones.any()
        # The other way round (the field's owner second), as a tuple of per-env dicts.
        obs, _, _, _ = venv.step(({"code": "print(3)"}, {"code": "print(4)", "timeout": 5.0}))
        assert list(obs["stdout"]) == ["3\n", "4\n"]
        # Gymnasium's batched form, every env given the same fields, still works.
        obs, _, _, _ = venv.step({"code": ("print(5)", "print(6)")})
        assert list(obs["stdout"]) == ["5\n", "6\n"]
    finally:
        venv.close()
