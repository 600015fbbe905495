"""A few GRPO steps on the tiny model with rewards from real env executions."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.client.transport import BinaryClient
from openenv_gym.trl import EnvPool, EnvReward, EnvRollout, episode_reward, extract_code
from openenv_gym.trl.datasets import humaneval_dataset

from tests.trl.grpo_helpers import PROBLEM, grpo_config

pytestmark = pytest.mark.timeout(420)


class Spy:
    """A zero-weight reward function that records what GRPO scored (prompts, completions)."""

    __name__ = "spy"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, prompts: list, completions: list, **kwargs: object) -> list[float]:
        self.calls.append(list(completions))
        return [0.0] * len(completions)


def _trainer(model, tok, tmp_path, **kwargs):
    from trl import GRPOTrainer

    args = grpo_config(tmp_path, **kwargs.pop("config", {}))
    return GRPOTrainer(model=model, args=args, processing_class=tok, **kwargs)


def test_grpo_on_coding_rewards_are_the_envs(solver, tmp_path) -> None:
    model, tok = solver
    spy = Spy()
    history: list[list] = []
    with EnvPool("coding", num_workers=2, provider="process", task="humaneval") as pool:
        reward = EnvReward(pool, option_columns=("problem",))

        def record(prompts, completions, **kw):
            history.append(list(reward.last_outcomes))  # runs right after EnvReward
            return [0.0] * len(completions)

        trainer = _trainer(model, tok, tmp_path, reward_funcs=[reward, spy, record],
                           train_dataset=humaneval_dataset([PROBLEM]),
                           config={"reward_weights": [1.0, 0.0, 0.0]})
        trainer.train()
    assert trainer.state.global_step == 2 and len(spy.calls) == 2
    rewards = [o.reward for step in history for o in step]
    assert all(o.ok and o.infos[-1]["task_id"] == "HumanEval/2" for step in history for o in step)
    assert set(rewards) - {0.0}, "the nudged model should pass some checks"
    # The same completions run again through a plain RemoteEnv give the same rewards.
    env = gym.make("OpenEnv/Coding-v0", provider="process", task="humaneval")
    try:
        for completions, outcomes in zip(spy.calls, history):
            for text, out in zip(completions, outcomes):
                env.reset(options={"problem": PROBLEM})
                obs, r, *_ = env.step({"code": extract_code(text)})
                assert r == pytest.approx(out.reward)
                assert obs["tests_passed"] == out.observations[-1]["tests_passed"]
    finally:
        env.close()
    logged = [h["rewards/openenv_coding/mean"] for h in trainer.state.log_history if "rewards/openenv_coding/mean" in h]
    assert logged == pytest.approx([sum(o.reward for o in s) / len(s) for s in history], abs=1e-6)


def test_grpo_continues_through_a_timeout_and_a_crash(solver, tmp_path) -> None:
    model, tok = solver
    # A body that hangs in every check outlasts the 4 s episode (3 s per check); a hang at
    # module level would not: a program that does not load fails all its checks at once.
    hostile = iter(["    while True:\n        pass\n", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"])

    def action_fn(text: str) -> dict:
        # The first two completions of the run are replaced by a hang and a worker kill.
        return {"code": next(hostile, None) or extract_code(text)}

    steps: list[list] = []
    # confine=False: a confined completion cannot signal its worker (Landlock), and this test
    # needs a worker that dies mid-step.
    with EnvPool("coding", num_workers=2, provider="process", task="humaneval", episode_timeout=4.0, confine=False,
                 failure_reward={"timeout": -1.0, "crash": -0.5}) as pool:
        reward = EnvReward(pool, option_columns=("problem",), action_fn=action_fn)

        def record(prompts, completions, **kw):
            steps.append(list(reward.last_outcomes))
            return [0.0] * len(completions)

        trainer = _trainer(model, tok, tmp_path, reward_funcs=[reward, record],
                           train_dataset=humaneval_dataset([PROBLEM]),
                           config={"reward_weights": [1.0, 0.0]})
        trainer.train()
        assert pool.stats["timeout"] == 1 and pool.stats["crash"] == 1
    assert trainer.state.global_step == 2
    first = {(o.failure, o.reward) for o in steps[0] if not o.ok}
    assert first == {("timeout", -1.0), ("crash", -0.5)}
    assert all(o.ok for o in steps[1]), "the replaced workers serve the next step"


def test_grpo_multi_turn_on_persistent_coding(solver, tmp_path) -> None:
    model, tok = solver
    with EnvPool("coding", num_workers=2, provider="process", persistent=True) as pool:
        # A short feedback line leaves room in the token budget for more turns.
        rollout = EnvRollout(pool, max_turns=3, observation_fn=lambda obs: f"# exit {obs['exit_code']}\n")
        seen: list[list] = []

        def record(prompts, completions, **kw):
            seen.append(list(rollout.last_outcomes))
            return [0.0] * len(completions)

        trainer = _trainer(model, tok, tmp_path, reward_funcs=[episode_reward, record],
                           rollout_func=rollout, train_dataset=humaneval_dataset([PROBLEM]),
                           config={"reward_weights": [1.0, 0.0], "max_completion_length": 48})
        trainer.train()
    assert trainer.state.global_step == 2
    outcomes = [o for step in seen for o in step]
    assert all(o.ok and 1 <= len(o.actions) <= 3 for o in outcomes)
    assert any(len(o.actions) > 1 for o in outcomes), "some episode should take several turns"
    # Replaying each episode's actions in one session of a plain RemoteEnv gives its reward:
    # the last step's (Coding's steps score the cell just run: the pool's default "final").
    env = gym.make("OpenEnv/Coding-v0", provider="process", persistent=True)
    try:
        for o in outcomes:
            env.reset()
            rewards = [env.step(a)[1] for a in o.actions]
            assert rewards == pytest.approx(o.rewards) and rewards[-1] == pytest.approx(o.reward)
    finally:
        env.close()
    logged = [h["rewards/episode_reward/mean"] for h in trainer.state.log_history if "rewards/episode_reward/mean" in h]
    assert logged == pytest.approx([sum(o.reward for o in s) / len(s) for s in seen], abs=1e-6)


def test_grpo_multi_turn_on_git(solver, tmp_path) -> None:
    from datasets import Dataset

    model, tok = solver
    with EnvPool("git", num_workers=2, provider="process", task="create-branch", reward_mode="final") as pool:
        rollout = EnvRollout(pool, max_turns=2, show_reset_observation=True,
                             observation_fn=lambda obs: f"# exit {obs['exit_code']}\n")
        seen: list[list] = []

        def record(prompts, completions, **kw):
            seen.append(list(rollout.last_outcomes))
            return [0.0] * len(completions)

        trainer = _trainer(model, tok, tmp_path, reward_funcs=[episode_reward, record], rollout_func=rollout,
                           train_dataset=Dataset.from_list([{"prompt": "Run one git command per turn.\n"}]),
                           config={"reward_weights": [1.0, 0.0], "max_completion_length": 32})
        trainer.train()
    assert trainer.state.global_step == 2
    outcomes = [o for step in seen for o in step]
    assert all(o.ok and o.actions and set(o.actions[0]) == {"command"} for o in outcomes)
    # The reward GRPO got is the env's checks score after the episode's last command.
    env = gym.make("OpenEnv/Git-v0", provider="process", task="create-branch")
    try:
        for o in outcomes:
            env.reset()
            for action in o.actions:
                obs, reward, *_ = env.step(action)
            assert reward == pytest.approx(o.reward)
            assert obs["checks_passed"] == o.observations[-1]["checks_passed"]
    finally:
        env.close()


def test_a_trainer_without_the_generation_call_is_refused_before_any_episode(solver, tmp_path) -> None:
    """A TRL whose GRPOTrainer lost ``_generate_single_turn`` (a private method) gets a clear
    error naming the supported range and the public alternative, and no session is opened."""
    from trl import GRPOTrainer

    class LaterTrainer(GRPOTrainer):
        _generate_single_turn = None  # as if a later TRL renamed it

    model, tok = solver
    with EnvPool("echo", num_workers=1, provider="process") as pool:
        rollout = EnvRollout(pool, action_fn=lambda text: {"message": text[:8]})
        trainer = LaterTrainer(model=model, args=grpo_config(tmp_path), processing_class=tok,
                               reward_funcs=[episode_reward], rollout_func=rollout,
                               train_dataset=humaneval_dataset([PROBLEM]))
        health = BinaryClient(pool.workers[0].address)
        before = health.request({"op": "health"})["sessions"]
        with pytest.raises(RuntimeError, match=r"_generate_single_turn.*trl>=1\.16,<2.*tool_env_factory"):
            rollout(["x"], trainer)
        assert health.request({"op": "health"})["sessions"] == before, "no episode was opened"
        health.drop()
