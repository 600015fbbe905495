"""EnvReward (and a tool env that does not show the reset) ties each completion to its own
prompt's task where the pool's env draws one at each reset, and EnvReward seeds resets from the
prompt as EnvRollout and the tool envs do. Without options a drawn HumanEval problem, which the
model never saw, graded each completion against another problem than its prompt's."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from openenv_gym.catalog import get_env_info
from openenv_gym.envs.coding.humaneval import get_problem
from openenv_gym.errors import InvalidRequestError
from openenv_gym.trl import EnvPool, EnvReward, EnvRollout, prompt_seed, tool_env_factory
from openenv_gym.trl.datasets import row_task

pytestmark = pytest.mark.timeout(120)


def test_a_drawn_task_is_the_rows_problem_by_default() -> None:
    problem = get_problem(2)
    with EnvPool("coding", num_workers=1, provider="process", task="humaneval") as pool:
        reward = EnvReward(pool)  # no option_columns: TRL still passes the dataset's columns
        rewards = reward(prompts=[problem.prompt] * 3, completions=[problem.canonical_solution] * 3,
                         problem=[2, 2, 2])
        assert [o.infos[0]["task_id"] for o in reward.last_outcomes] == ["HumanEval/2"] * 3
        assert rewards == [1.0, 1.0, 1.0]
        # Without the column each reset would draw some other problem: refused before any run.
        episodes = pool.stats["episodes"]
        with pytest.raises(KeyError, match=r"\['problem'\].*task='humaneval'.*EnvReward"):
            reward(prompts=[problem.prompt], completions=[problem.canonical_solution])
        assert pool.stats["episodes"] == episodes


def test_a_coding_tool_env_takes_a_drawn_task_from_the_row_too() -> None:
    problem = get_problem(2)
    with EnvPool("coding", num_workers=1, provider="process", task="humaneval") as pool:
        env = tool_env_factory(pool)()  # CodingTools: its reset shows the model nothing
        env.reset(prompt=problem.prompt, problem=2)
        assert "[tests_passed: 3/3]" in env.run_python(problem.canonical_solution)
        assert env.outcome.infos[0]["task_id"] == "HumanEval/2" and env.get_reward() == 1.0
        with pytest.raises(KeyError, match=r"\['problem'\].*task='humaneval'.*CodingTools"):
            env.reset(prompt=problem.prompt)


def test_a_fixed_task_or_explicit_options_are_left_alone() -> None:
    with EnvPool("coding", num_workers=1, provider="process", task="humaneval/2") as pool:
        [job] = EnvReward(pool).jobs(["x"], ["p"])
        assert job.options is None
        [job] = EnvReward(pool, options_fn=lambda row: {"problem": 5}).jobs(["x"], ["p"])
        assert job.options == {"problem": 5}


def test_the_seed_comes_from_the_prompt_unless_a_column_gives_it() -> None:
    with EnvPool("echo", num_workers=1, provider="process") as pool:
        jobs = EnvReward(pool).jobs(["a", "b", "c"], ["p", "p", "q"])
        assert [j.seed for j in jobs] == [prompt_seed("p"), prompt_seed("p"), prompt_seed("q")]
        [job] = EnvReward(pool, seed_column="seed").jobs(["a"], ["p"], seed=[7])
        assert job.seed == 7


def test_a_drawn_task_the_model_is_shown_stays_drawn() -> None:
    # Git's tool env shows the instruction a reset drew (task="suite"): the row need not name it.
    git_suite = SimpleNamespace(info=get_env_info("git"), env_kwargs={"task": "suite"})
    shown = row_task(git_suite, (), None, None, task_shown=True, adapter="GitTools")
    assert shown.options({"prompt": "p"}) is None and shown.seed({"prompt": "p"}) == prompt_seed("p")
    hidden = row_task(git_suite, (), None, None, task_shown=False, adapter="EnvReward")
    assert hidden.options({"prompt": "p", "task": "create-branch"}) == {"task": "create-branch"}


def test_a_git_row_without_its_task_is_not_sent_to_humaneval() -> None:
    # The error told a Git user "humaneval_dataset() has 'problem'": a column Git does not read.
    git_suite = SimpleNamespace(info=get_env_info("git"), env_kwargs={"task": "suite"})
    hidden = row_task(git_suite, (), None, None, task_shown=False, adapter="EnvReward")
    with pytest.raises(KeyError, match=r"\['task'\].*task='suite'.*add the column, or pass") as missing:
        hidden.options({"prompt": "p"})
    assert "humaneval" not in str(missing.value)


def test_a_rollout_that_would_hide_a_drawn_task_is_refused() -> None:
    # EnvRollout gets the prompts alone (TRL's rollout_func has no dataset columns): with
    # task="humaneval" each reset drew a problem from the prompt's seed, which the model never
    # saw, and HumanEval/2's answers were graded against another problem's asserts.
    with EnvPool("coding", num_workers=1, provider="process", task="humaneval") as pool:
        with pytest.raises(InvalidRequestError, match=r"task='humaneval'.*show_reset_observation=True"
                                                      r".*options_fn=.*'problem'"):
            EnvRollout(pool)
        EnvRollout(pool, show_reset_observation=True)  # the model sees the drawn problem
        EnvRollout(pool, options_fn=lambda prompt: {"problem": 2})  # the prompt's own problem
    with EnvPool("coding", num_workers=1, provider="process", task="humaneval/2") as pool:
        EnvRollout(pool)  # a fixed task: nothing is drawn
