"""Batched infos: ``batch_infos`` gives exactly what Gymnasium's ``_add_info`` gives, env by env."""

from __future__ import annotations

import random
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from openenv_gym.errors import InvalidActionError
from openenv_gym.vector.batch import BatchBuffer, _columns, batch_infos, split_actions

N = 4


@pytest.fixture(scope="module")
def add_info() -> Any:
    envs = gym.make_vec("CartPole-v1", num_envs=N, vectorization_mode="sync")
    yield envs._add_info
    envs.close()


def _reference(add_info: Any, infos: dict[int, dict[str, Any]]) -> Any:
    out: dict[str, Any] = {}
    for i in sorted(infos):
        out = add_info(out, infos[i], i)
    return out


def _outcome(fn: Any) -> Any:
    try:
        return fn()
    except Exception as exc:  # both sides must fail alike on the same input
        return type(exc)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, type) or isinstance(b, type):
        return a is b
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and repr(a.tolist()) == repr(b.tolist()))
    return type(a) is type(b) and repr(a) == repr(b)


def test_the_usual_case_is_one_array_and_mask_per_key(add_info: Any) -> None:
    infos = {i: {"lives": 3 - i, "frame_number": 100 * i, "ok": i % 2 == 0} for i in range(N)}
    out = batch_infos(N, infos, add_info)
    assert list(out) == ["lives", "_lives", "frame_number", "_frame_number", "ok", "_ok"]
    np.testing.assert_array_equal(out["lives"], [3, 2, 1, 0])
    assert out["ok"].dtype == np.bool_ and out["_lives"].all()
    assert out["_lives"] is not out["_ok"]  # each mask is the caller's own array
    assert _same(out, _reference(add_info, infos))


@pytest.mark.parametrize("infos", [
    {0: {"lives": 3}, 2: {"lives": 2}},  # some envs report nothing
    {0: {"a": 1}, 1: {"a": 2.5}, 2: {"a": 3}, 3: {"a": 4}},  # a float after an int: cast
    {0: {"a": 1.5}, 1: {"a": 2}, 2: {"a": 3}, 3: {"a": None}},  # None in a float column
    {0: {"a": 1, "_a": 5}, 1: {"a": 1, "_a": 5}, 2: {"a": 1, "_a": 5}, 3: {"a": 1, "_a": 5}},
    {0: {"final_obs": 1}, 1: {"final_obs": 2}, 2: {"final_obs": 3}, 3: {"final_obs": 4}},
    {i: {"a": 1, **({"b": 2} if i == 3 else {})} for i in range(N)},  # a key only later
    {i: {"nested": {"x": i}} for i in range(N)},
    {i: {"a": np.int64(i)} for i in range(N)},
    {i: {"big": 2**70} for i in range(N)},  # fails in both
])
def test_unusual_infos_match_gymnasium(add_info: Any, infos: dict[int, dict[str, Any]]) -> None:
    assert _same(_outcome(lambda: batch_infos(N, infos, add_info)),
                 _outcome(lambda: _reference(add_info, infos)))


def test_random_infos_match_gymnasium(add_info: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from openenv_gym.vector import batch

    columnwise = []
    monkeypatch.setattr(batch, "_columns", lambda n, rows: columnwise.append(
        _columns(n, rows)) or columnwise[-1])
    rng = random.Random(0)
    plain = [0, 1, -5, 2**40, 1.5, 2.0, True, False]
    other = [np.int64(3), np.float32(1.5), "s", None, np.zeros(2), {"x": 1}, [1, 2]]
    keys = ["lives", "a", "_a", "final_obs", 3]
    for _ in range(3000):
        infos: dict[int, dict[Any, Any]] = {}
        if rng.random() < 0.5:  # the usual shape, with now and then one odd value
            for i in range(N):
                infos[i] = {"lives": rng.randint(0, 5), "a": rng.random(), "done": rng.random() < 0.5}
            if rng.random() < 0.3:
                infos[rng.randrange(N)][rng.choice(["lives", "a", "done"])] = rng.choice(plain + other)
        for i in range(N) if not infos else ():
            if rng.random() < 0.85:
                names = ["lives", "a"] if rng.random() < 0.7 else rng.sample(keys, rng.randint(0, 3))
                infos[i] = {k: rng.choice(plain) if rng.random() < 0.8 else rng.choice(other)
                            for k in names}
        mine = _outcome(lambda: batch_infos(N, infos, add_info))
        assert _same(mine, _outcome(lambda: _reference(add_info, infos))), infos
    built = sum(out is not None for out in columnwise)
    assert 100 < built < len(columnwise)  # both ways were taken, many times


class _NoSample(gym.spaces.Text):
    def sample(self, *args, **kwargs):  # noqa: D102
        raise AssertionError("the buffer sampled the observation space")


def test_a_batch_buffer_fills_nested_spaces_with_empty_values_not_samples() -> None:
    # Coding-v0's observation: Text spaces of up to 1 MiB; sampling one per env made
    # make_vec spend ~0.25 s of trainer CPU per env before any worker answered.
    space = gym.spaces.Dict({"stdout": _NoSample(1 << 20, min_length=0),
                             "exit_code": gym.spaces.Box(-255, 255, (), np.int64)})
    buf = BatchBuffer(space, 4)
    assert [item["stdout"] for item in buf.items] == [""] * 4
    buf.write(2, {"stdout": "hi", "exit_code": 0})
    batch = buf.batch()
    assert batch["stdout"] == ("", "", "hi", "") and batch["exit_code"].tolist() == [0, 0, 0, 0]
    assert buf.items[0] is not buf.items[1]  # one placeholder per env, not shared


def test_split_actions_leaves_fields_an_action_leaves_out_to_the_env() -> None:
    # As a single env's action may leave out a field its model defaults (Coding's timeout).
    single = gym.spaces.Dict({"code": gym.spaces.Text(100), "timeout": gym.spaces.Box(0.0, 60.0, ())})
    batched = gym.vector.utils.batch_space(single, 2)
    assert split_actions(batched, {"code": ("a", "b")}) == [{"code": "a"}, {"code": "b"}]
    with pytest.raises(InvalidActionError, match="do not fit the batched action space"):
        split_actions(batched, {"cod": ("a", "b")})  # nothing it knows: refused, as before
