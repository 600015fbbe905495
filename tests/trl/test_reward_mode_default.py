"""EnvPool's default ``reward_mode`` follows the env: an env whose step rewards score where
the episode stands (Git, Coding) is worth its last reward, not their sum, which paid an
agent for every step it lingered on a half-done task."""

from __future__ import annotations

import pytest

from openenv_gym.trl import EnvPool, EpisodeJob

pytestmark = pytest.mark.timeout(300)

# create-branch's checks: the branch exists, is checked out, is at main. Creating it without
# switching passes two of three; the no-ops after it keep that score without ending the task.
_LINGER = [{"command": "git branch feature/login"}, {"command": "true"}, {"command": "true"}]


def test_git_scores_are_not_summed_by_default() -> None:
    with EnvPool("git", num_workers=1, provider="process", task="create-branch") as pool:
        assert pool.reward_mode == "final"
        [out] = pool.run([EpisodeJob(_LINGER)])
    assert out.ok, out.message
    assert len(out.rewards) == 3 and 0 < out.rewards[0] == out.rewards[-1] < 1  # partly done, lingering
    assert out.reward == pytest.approx(out.rewards[-1])  # "return" would have paid three times that


def test_git_with_shaping_sums_its_score_changes() -> None:
    with EnvPool("git", num_workers=1, provider="process", task="create-branch", shaping=True) as pool:
        assert pool.reward_mode == "return"
        [out] = pool.run([EpisodeJob(_LINGER)])
    assert out.ok, out.message
    assert out.reward == pytest.approx(sum(out.rewards))


def test_coding_attempts_are_worth_the_last_one_and_echo_sums() -> None:
    with EnvPool("coding", num_workers=1, provider="process") as pool:
        assert pool.reward_mode == "final"
        [out] = pool.run([EpisodeJob([{"code": "print(1)"}, {"code": "raise SystemExit(3)"}])])
        assert out.rewards == [1.0, 0.0] and out.reward == 0.0
    with EnvPool("echo", num_workers=1, provider="process") as pool:
        assert pool.reward_mode == "return"
        [out] = pool.run([EpisodeJob([{"message": "a"}, {"message": "abc"}])])
        assert out.reward == pytest.approx(0.4)


def test_an_explicit_reward_mode_wins() -> None:
    with EnvPool("git", num_workers=1, provider="process", task="create-branch", reward_mode="return") as pool:
        assert pool.reward_mode == "return"
        [out] = pool.run([EpisodeJob(_LINGER)])
    assert out.reward == pytest.approx(sum(out.rewards))
