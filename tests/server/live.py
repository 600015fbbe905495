"""A test env whose steps wait at a gate the test opens, and a real uvicorn server in this
process (on 127.0.0.1) serving any env, so tests hold steps in flight without timing."""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

import numpy as np
import uvicorn
from gymnasium import spaces

from openenv_gym.envs.base import Environment
from openenv_gym.protocol.wire import MAX_FRAME
from openenv_gym.server.http import create_app
from openenv_gym.server.service import EnvService

#: GateEnv's actions.
PLAIN, WAIT, MINUS_INF = 0, 1, 2


class Gate:
    """Where GateEnv steps wait; counts the steps waiting and lets them all through at once."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._open = False
        self.inside = 0

    def enter(self) -> None:
        with self._cond:
            self.inside += 1
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._open)
            self.inside -= 1

    def wait_inside(self, n: int, timeout: float = 60.0) -> bool:
        """Whether ``n`` steps are waiting (within ``timeout`` seconds; a bound, not a measure)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.inside >= n, timeout)

    def open(self) -> None:
        with self._cond:
            self._open = True
            self._cond.notify_all()


class GateEnv(Environment):
    """Action PLAIN: reward 1; WAIT: wait at the gate, then reward 1; MINUS_INF: reward -inf.

    Episodes end (terminated) after ``length`` steps. Reset options: ``{"raise": text}``
    raises ``ValueError(text)``, as an env's own bug or refusal would.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, gate: Gate, length: int = 100, render_mode: str | None = "ansi") -> None:
        super().__init__(render_mode=render_mode)
        self.gate = gate
        self.length = length
        self.action_space = spaces.Discrete(3)
        self.observation_space = spaces.Box(-np.inf, np.inf, (1,), np.float32)
        self.steps = 0
        self.closed = threading.Event()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if options and "raise" in options:
            raise ValueError(options["raise"])
        self.steps = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: Any):
        if action == WAIT:
            self.gate.enter()
        self.steps += 1
        reward = -np.inf if action == MINUS_INF else 1.0
        return np.full(1, self.steps, np.float32), reward, self.steps >= self.length, False, {}

    def render(self) -> str:
        return f"after {self.steps} steps"

    def close(self) -> None:
        self.closed.set()


class Live:
    """A served app: its ``url``, its ``service``, and the ``envs`` its factory made."""

    def __init__(self, url: str, service: EnvService, envs: list[Environment]) -> None:
        self.url, self.service, self.envs = url, service, envs


@contextlib.contextmanager
def live_server(factory: Callable[[], Environment], *, max_sessions: int = 8,
                idle_timeout: float | None = None, max_body_size: int = MAX_FRAME) -> Iterator[Live]:
    """Serve ``factory``'s env with uvicorn on 127.0.0.1 (any free port) in a thread of this process.

    uvicorn's logging is left unconfigured, so its records reach pytest's ``caplog``.
    """
    envs: list[Environment] = []

    def make() -> Environment:
        env = factory()
        envs.append(env)
        return env

    service = EnvService(make, env_name="test", max_sessions=max_sessions, idle_timeout=idle_timeout)
    stopping = threading.Event()
    config = uvicorn.Config(create_app(service, max_body_size=max_body_size, stopping=stopping),
                            host="127.0.0.1", port=0, log_config=None, access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        started = threading.Event()
        while not server.started and thread.is_alive():
            started.wait(0.01)
        assert server.started, "uvicorn did not start"
        port = server.servers[0].sockets[0].getsockname()[1]
        yield Live(f"http://127.0.0.1:{port}", service, envs)
    finally:
        for env in envs:  # a failed test must not leave steps (and so the server) waiting
            if isinstance(env, GateEnv):
                env.gate.open()
        stopping.set()  # open /web/events streams end, as on a served env
        server.should_exit = True
        thread.join(30)
        service.shutdown()
