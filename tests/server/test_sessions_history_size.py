"""What a session remembers for /web stays small whatever the actions' size."""

from __future__ import annotations

import sys

from openenv_gym.envs.echo.env import MAX_MESSAGE, EchoEnv
from openenv_gym.server.service import EnvService
from openenv_gym.server.sessions import HISTORY
from openenv_gym.server.web import snapshot


def test_the_history_keeps_previews_of_long_actions() -> None:
    service = EnvService(EchoEnv, env_name="echo")
    try:
        sid = service.reset()["sid"]
        for i in range(HISTORY):
            service.step(sid, {"message": str(i % 10) * MAX_MESSAGE})
        session = service.session(sid)
        kept = sum(sys.getsizeof(action["message"]) for _, action, _ in session.history)
        assert kept < HISTORY * 2000  # was HISTORY * 64 KiB: every action whole
        row = snapshot(service)["sessions"][0]["history"][0]
        assert row["step"] == HISTORY and row["action"].startswith("message: 999")  # the page shows the same
        assert session.last_obs["echo"] == "9" * MAX_MESSAGE  # the observation itself is untouched
    finally:
        service.shutdown()
