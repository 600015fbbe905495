"""A worker's vector slice: per-env commands, per-env errors, and a bad open that harms nothing."""

from __future__ import annotations

import mmap
import os

import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.envs.base import Environment
from openenv_gym.envs.gym.env import GymEnv
from openenv_gym.protocol import ops
from openenv_gym.protocol.bell import Bell
from openenv_gym.protocol.slices import RESET, SKIP, STEP, STEP_AUTORESET, SliceLayout, create_shared
from openenv_gym.protocol.sockets import FrameReader, connect, send_frame
from openenv_gym.protocol.wire import decode, encode
from openenv_gym.server.binary import BinaryServer
from openenv_gym.server.service import EnvService
from openenv_gym.server.slices import VectorSlice


@pytest.fixture
def service() -> EnvService:
    svc = EnvService(lambda: GymEnv("CartPole-v1"), env_name="gym", idle_timeout=None)
    yield svc
    svc.shutdown()


def test_slice_steps_like_separate_envs(service: EnvService) -> None:
    piece = VectorSlice(service, 3)
    piece.columns["cmd"][:] = RESET
    reply = piece.step({"seeds": [1, 2, 3]})
    assert "errors" not in reply
    refs = [GymEnv("CartPole-v1") for _ in range(3)]
    want = [env.reset(seed=s)[0] for env, s in zip(refs, (1, 2, 3))]
    np.testing.assert_array_equal(piece.columns["obs"], np.stack(want))
    for t in range(30):
        actions = np.array([t % 2, 1, 0])
        piece.columns["cmd"][:] = STEP_AUTORESET
        piece.columns["action"][:] = actions
        reply = piece.step({})
        for j, env in enumerate(refs):
            obs, reward, term, trunc, _ = env.step(actions[j])
            if term or trunc:
                np.testing.assert_array_equal(reply["finals"][j][0], obs)
                obs, _ = env.reset()  # unseeded reset: only the final obs is comparable
                assert piece.columns["terminated"][j] == term
                continue
            np.testing.assert_array_equal(piece.columns["obs"][j], obs)
            assert piece.columns["reward"][j] == reward and not piece.columns["terminated"][j]


def test_one_bad_action_is_that_envs_error_and_the_others_step(service: EnvService) -> None:
    piece = VectorSlice(service, 3)
    piece.columns["cmd"][:] = RESET
    piece.step({"seeds": [0, 0, 0]})
    before = piece.columns["obs"].copy()
    piece.columns["cmd"][:] = [STEP, STEP, SKIP]
    piece.columns["action"][:] = [1, 7, 1]  # Discrete(2): 7 does not fit
    reply = piece.step({})
    assert set(reply["errors"]) == {1}
    assert reply["errors"][1]["type"] == "InvalidActionError" and "7" in reply["errors"][1]["message"]
    assert not np.array_equal(piece.columns["obs"][0], before[0])  # stepped
    np.testing.assert_array_equal(piece.columns["obs"][1:], before[1:])  # refused, skipped
    piece.columns["cmd"][:] = STEP
    piece.columns["action"][:] = 0
    assert "errors" not in piece.step({})  # the session goes on


def test_step_before_reset_and_bad_seeds_are_typed_errors(service: EnvService) -> None:
    piece = service.slices[service.open_slice(2)["slice"]]
    piece.columns["cmd"][:] = STEP
    reply = piece.step({})
    assert {e["type"] for e in reply["errors"].values()} == {"ResetNeededError"}
    piece.columns["cmd"][:] = RESET
    reply = piece.step({"seeds": [-1, 3]})
    assert list(reply["errors"]) == [0] and "seed" in reply["errors"][0]["message"]
    bad = service.handle({"op": "slice_step", "slice": piece.id, "seeds": "nope"})
    assert bad["ok"] is False and "seeds" in bad["error"]["message"]
    assert service.handle({"op": "slice_step", "slice": "nope"})["error"]["type"] == "InvalidRequestError"


def test_slice_open_with_a_bad_descriptor_is_refused_and_the_server_serves_on(tmp_path, service) -> None:
    server = BinaryServer(service, f"unix://{tmp_path}/w.sock")
    sock = connect(server.address, 10)
    try:
        reader = FrameReader(sock)
        r, w = os.pipe()  # not a buffer of the announced size
        send_frame(sock, encode({"op": "slice_open", "n": 2, "size": 4096}), [r])
        os.close(r)
        os.close(w)
        reply = decode(reader.read())
        assert reply["ok"] is False and "4096" in reply["error"]["message"]
        assert service.slices == {} and len(service.sessions) == 0
        send_frame(sock, encode({"op": "health"}))
        assert decode(reader.read())["status"] == "ok"
    finally:
        sock.close()
        server.close()


def _eventfds() -> int:
    return sum(os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:[eventfd]"
               for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}"))


@pytest.mark.parametrize("flagged", [True, False])
def test_a_second_descriptor_is_the_bell_only_when_slice_open_says_so(tmp_path, service, flagged) -> None:
    server = BinaryServer(service, f"unix://{tmp_path}/w.sock")
    sock = connect(server.address, 10)
    bell = Bell()
    try:
        reader = FrameReader(sock)
        env = GymEnv("CartPole-v1")
        size = SliceLayout(env.observation_space, env.action_space, 2, env.info_types).size
        fd, buffer = create_shared(size)
        before = _eventfds()
        send_frame(sock, encode(ops.slice_open(2, size, bell=flagged)), [fd, bell.fileno()])
        os.close(fd)
        assert decode(reader.read())["ok"] is True
        # the server's copy is held while its connection listens, closed when it does not
        assert _eventfds() == before + flagged
        send_frame(sock, encode({"op": "health"}))
        assert decode(reader.read())["status"] == "ok"
        buffer.close()
    finally:
        sock.close()
        server.close()
        bell.close()


class _Counter(Environment):
    """Declares three infos; ``action`` picks an info that fits them or one of the kinds that
    must travel inline instead."""

    info_types = {"count": "int", "ratio": "float", "flag": "bool"}

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = spaces.Box(0, 100, (1,), np.float32)
        self.action_space = spaces.Discrete(6)
        self.count = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.count = 0
        return np.zeros(1, np.float32), {"count": 0, "ratio": 0.0, "flag": False}

    def step(self, action):
        self.count += 1
        info: dict = {"count": self.count, "ratio": self.count / 4, "flag": self.count % 2 == 0}
        if action == 1:
            info["extra"] = "x"           # a key beyond the declared ones
        elif action == 2:
            info["count"] = True          # a bool where an int is declared
        elif action == 3:
            info["count"] = 1 << 70       # beyond int64
        elif action == 4:
            info["count"] = np.int64(3)   # not a Python int
        elif action == 5:
            info = {}                     # nothing to report
        return np.full(1, self.count, np.float32), 0.0, False, False, info


def test_declared_infos_go_to_columns_and_any_other_info_inline() -> None:
    service = EnvService(_Counter, env_name="counter", idle_timeout=None)
    try:
        assert service.spec()["info_types"] == _Counter.info_types
        env = _Counter()
        layout = SliceLayout(env.observation_space, env.action_space, 6, _Counter.info_types)
        piece = VectorSlice(service, 6, mmap.mmap(-1, layout.size))  # shared: only leftovers inline
        piece.columns["cmd"][:] = RESET
        assert piece.step({}) == {}  # the reset infos fit: nothing inline
        assert piece.columns["info_ok"].all()
        piece.columns["cmd"][:] = STEP
        piece.columns["action"][:] = [0, 1, 2, 3, 4, 5]
        reply = piece.step({})
        assert piece.columns["info_ok"].tolist() == [True, False, False, False, False, False]
        assert (piece.columns["info.count"][0], piece.columns["info.ratio"][0],
                piece.columns["info.flag"][0]) == (1, 0.25, False)
        assert set(reply["infos"]) == {1, 2, 3, 4}  # env 5's empty info is not sent at all
        assert reply["infos"][1]["extra"] == "x" and reply["infos"][3]["count"] == 1 << 70
    finally:
        service.shutdown()


def test_an_env_declaring_an_info_type_that_has_no_column_fails_at_start() -> None:
    class Bad(_Counter):
        info_types = {"count": "int64"}

    with pytest.raises(ValueError, match="'count' has type 'int64'.*int, float, bool"):
        EnvService(Bad, env_name="bad", idle_timeout=None)


_CLOSE_DURING_STEP = r"""
import mmap, sys, threading
import numpy as np
from openenv_gym.envs.gym.env import GymEnv
from openenv_gym.protocol import ops
from openenv_gym.protocol.bell import Bell
from openenv_gym.protocol.slices import RESET, STEP, SliceLayout, create_shared
from openenv_gym.server.service import EnvService

entered, release = threading.Event(), threading.Event()

class Slow(GymEnv):
    def step(self, action):
        entered.set()
        release.wait(30)
        return super().step(action)

svc = EnvService(lambda: Slow("CartPole-v1"), env_name="gym", idle_timeout=None)
size = SliceLayout(Slow("CartPole-v1").observation_space, Slow("CartPole-v1").action_space, 1, {}).size
fd, mine = create_shared(size)
piece = svc.slices[svc.open_slice(1, fd, size)["slice"]]
piece.columns["cmd"][:] = RESET
piece.step({"seeds": [0]})
piece.columns["cmd"][:] = STEP
piece.columns["action"][:] = 1
stepper = threading.Thread(target=lambda: piece.step({}))
stepper.start()
assert entered.wait(30)
closer = threading.Thread(target=svc.shutdown)   # what a worker does when its owner leaves
closer.start()
while not all(s.closed for s in piece.sessions):  # the slice is closed; its step still runs
    pass
release.set()                                     # the step now writes its results
stepper.join(30)
closer.join(30)
print("survived")
"""


def test_closing_a_slice_while_it_steps_does_not_crash_the_worker() -> None:
    # A worker shuts down (its trainer closed the vector env mid-step, or died) while a
    # slice step is in flight: the step writes its results into the shared buffer after
    # the slice was closed. Unmapping the buffer under it was a segfault of the worker,
    # which then left its Coding/Git sandbox folders in $TMPDIR.
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _CLOSE_DURING_STEP], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "survived" in done.stdout, (done.returncode, done.stderr[-2000:])
