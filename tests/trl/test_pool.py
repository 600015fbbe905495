"""EnvPool on real workers: concurrent episodes, env rewards in order, and defined failures."""

from __future__ import annotations

import gc
import logging
import os

import pytest

from openenv_gym.trl import EnvPool, EpisodeJob, FailurePolicy

pytestmark = pytest.mark.timeout(240)


def test_batch_runs_on_every_worker_and_keeps_order() -> None:
    messages = ["a" * n for n in (3, 1, 4, 1, 5, 9, 2, 6)]
    with EnvPool("echo", num_workers=3, provider="process") as pool:
        outcomes = pool.run([EpisodeJob([{"message": m}]) for m in messages])
        assert [o.reward for o in outcomes] == pytest.approx([0.1 * len(m) for m in messages])
        assert [o.observations[-1]["echo"] for o in outcomes] == messages
        assert {o.worker for o in outcomes} == {0, 1, 2}
        # multi-step job: the return is the sum of the env's step rewards
        [two] = pool.run([EpisodeJob([{"message": "ab"}, {"message": "abc"}])])
        assert two.rewards == pytest.approx([0.2, 0.3]) and two.reward == pytest.approx(0.5)
        assert pool.stats["episodes"] == 9 and not pool.failures


def test_final_reward_mode_and_env_ending_the_episode() -> None:
    with EnvPool("echo", num_workers=1, provider="process", reward_mode="final", max_steps=2) as pool:
        [out] = pool.run([EpisodeJob([{"message": m} for m in ("a", "abc", "unused")])])
        assert out.truncated and out.reward == pytest.approx(0.3)
        assert len(out.actions) == 2  # the env truncated after 2 steps: the third never ran


def test_env_error_gives_failure_reward_and_the_session_survives(caplog: pytest.LogCaptureFixture) -> None:
    with EnvPool("echo", num_workers=1, provider="process",
                 failure_reward={"env_error": -2.0}) as pool:
        with caplog.at_level(logging.WARNING, logger="openenv_gym.trl"):
            bad, good = pool.run([EpisodeJob([{"msg": "typo"}]), EpisodeJob([{"message": "ok"}])])
        assert bad.failure == "env_error" and bad.reward == -2.0
        assert "InvalidActionError" in bad.message and "message" in bad.message
        assert good.ok and good.reward == pytest.approx(0.2)
        # Text a tokenizer could emit but UTF-8 cannot carry (a lone surrogate) is the
        # episode's error too, not an exception out of the reward function.
        [odd] = pool.run([EpisodeJob([{"message": "ab\udcff"}])])
        assert odd.failure == "env_error" and "UTF-8" in odd.message
        assert pool.workers[0].restarts == 0  # an env error does not cost a worker
        assert any("env_error" in r.getMessage() for r in caplog.records)


def test_timeout_and_crash_give_defined_rewards_and_the_worker_is_replaced(
        caplog: pytest.LogCaptureFixture) -> None:
    kill_parent = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
    # confine=False: a confined step cannot signal its worker (Landlock); this test needs one
    # that dies mid-step.
    with EnvPool("coding", num_workers=1, provider="process", episode_timeout=2.0, confine=False,
                 failure_reward={"timeout": -1.0, "crash": None}) as pool:
        with caplog.at_level(logging.WARNING, logger="openenv_gym.trl"):
            hang, crash, fine = pool.run([EpisodeJob([{"code": "while True:\n    pass\n"}]),
                                          EpisodeJob([{"code": kill_parent}]),
                                          EpisodeJob([{"code": "print(6 * 7)\n"}])])
        assert (hang.failure, hang.reward) == ("timeout", -1.0)
        assert (crash.failure, crash.reward) == ("crash", None)
        assert fine.ok and fine.reward == 1.0 and fine.observations[-1]["stdout"] == "42\n"
        assert pool.workers[0].restarts == 2
        assert pool.stats["timeout"] == 1 and pool.stats["crash"] == 1
        reasons = " ".join(r.getMessage() for r in caplog.records)
        assert "episode_timeout=2.0" in reasons and "closed the connection" in reasons


def test_one_timeout_costs_one_restart_and_later_episodes_on_the_worker_run() -> None:
    # Two lanes share a worker; one hangs. The worker is replaced once; the other lane's
    # episode in flight fails (its session is gone), and every later episode runs as usual.
    with EnvPool("coding", num_workers=1, provider="process", episode_timeout=2.0) as pool:
        hang, other = pool.open(2)
        for episode in (hang, other):
            assert episode.reset().failure is None
        assert hang.step({"code": "while True:\n    pass\n"}).failure == "timeout"
        assert other.step({"code": "print(1)\n"}).failure == "crash"  # restarted under it
        for _ in range(3):
            for episode in (hang, other):
                assert episode.reset().failure is None
                out = episode.step({"code": "print('ok')\n"})
                assert out.ok and out.observations[-1]["stdout"] == "ok\n", out.message
        assert pool.workers[0].restarts == 1
        assert (pool.stats["timeout"], pool.stats["crash"]) == (1, 1)
        pool.close_many([hang, other])


def test_leased_episodes_keep_state_across_turns() -> None:
    with EnvPool("coding", num_workers=2, provider="process", persistent=True) as pool:
        episodes = pool.open(3)
        assert sorted({e.worker for e in episodes}) == [0, 1]
        pool.reset_many(episodes, [None] * 3, [None] * 3)
        pool.step_many(episodes, [{"code": f"x = {n}\n"} for n in (1, 2, 3)])
        outs = pool.step_many(episodes, [{"code": "print(x * 10)\n"}] * 3)
        assert [o.observations[-1]["stdout"] for o in outs] == ["10\n", "20\n", "30\n"]
        assert [o.rewards for o in outs] == [[1.0, 1.0]] * 3
        assert [o.reward for o in outs] == [1.0, 1.0, 1.0]  # Coding's default reward_mode: "final"
        pool.close_many(episodes)


def test_bad_settings_are_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="unknown kinds"):
        FailurePolicy({"oom": 0.0})
    with pytest.raises(ValueError, match="reward_mode"):
        EnvPool("echo", num_workers=1, provider="process", reward_mode="mean")
    with pytest.raises(ValueError, match="num_workers"):
        EnvPool("echo", num_workers=0, provider="process")


def test_a_pool_dropped_without_close_stops_its_workers() -> None:
    import gc
    import os

    from tests.security.helpers import workers_of

    before = workers_of(os.getpid())
    pool = EnvPool("echo", num_workers=2, provider="process")
    assert len(workers_of(os.getpid()) - before) == 2
    del pool
    gc.collect()
    assert workers_of(os.getpid()) - before == set()


def test_env_kwargs_reach_the_env_for_names_the_pool_takes_itself() -> None:
    # step_timeout=... is the pool's cap on a request; the sandbox's own limit goes in
    # env_kwargs. The cap defaults to 30 s beyond the env's longest step (Coding's 60).
    with EnvPool("coding", num_workers=1, provider="process",
                 env_kwargs={"step_timeout": 1}) as pool:
        assert pool.step_timeout == 90.0
        [out] = pool.run([EpisodeJob([{"code": "import time\ntime.sleep(5)\n"}])])
        assert out.ok and out.observations[-1]["timed_out"]
    with EnvPool("echo", num_workers=1, provider="process", step_timeout=7) as pool:
        assert pool.step_timeout == 7.0
    with pytest.raises(ValueError, match="step_timeout must be a positive number"):
        EnvPool("echo", num_workers=1, provider="process", step_timeout=-1)
    with pytest.raises(ValueError, match="max_steps given both as keyword and in env_kwargs"):
        EnvPool("echo", num_workers=1, provider="process", max_steps=2, env_kwargs={"max_steps": 3})


def test_close_releases_every_lane_s_connection() -> None:
    # Without the garbage collector: an Episode and its pool refer to each other, so their
    # sockets stayed open after close() until a collection ran.
    with EnvPool("echo", num_workers=1, provider="process"):
        pass  # what the first pool starts for good (the provider's fork server)
    gc.collect()
    gc.disable()
    try:
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(3):
            with EnvPool("echo", num_workers=2, provider="process", concurrency=2) as pool:
                pool.run([EpisodeJob([{"message": "hi"}])] * 4)
        assert len(os.listdir("/proc/self/fd")) <= before
    finally:
        gc.enable()
