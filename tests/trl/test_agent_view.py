"""What the model reads: tool results and multi-turn rollouts, as an agent sees them."""

from __future__ import annotations

import itertools
import os
import signal
import time

import pytest

from openenv_gym.trl import EnvPool, EnvRollout, default_observation_fn, tool_env_factory

pytestmark = pytest.mark.timeout(240)

GIT_OBS = {"output": "", "exit_code": -9, "timed_out": True, "branch": "main",
           "instruction": "Merge `feature` into `main`.", "checks_passed": 1, "checks_total": 3}


def test_a_step_result_does_not_repeat_the_task_and_says_it_timed_out() -> None:
    text = default_observation_fn("git")(GIT_OBS)
    assert "Merge `feature`" not in text  # the model has it in its prompt already
    assert "timed out" in text and "[exit_code: -9]" in text
    assert "[checks_passed: 1/3]" in text
    # The reset observation poses the task, without an exit code of a command nobody ran.
    posed = default_observation_fn("git", task=True)({**GIT_OBS, "exit_code": 0, "timed_out": False})
    assert posed.startswith("Merge `feature` into `main`.") and "exit_code" not in posed


def test_free_form_coding_reports_no_tests_instead_of_zero_passed() -> None:
    text = default_observation_fn("coding")({"stdout": "42\n", "stderr": "", "exit_code": 0,
                                             "timed_out": False, "prompt": "", "tests_passed": 0,
                                             "tests_total": 0})
    assert text == "42\n[exit_code: 0]\n"


def test_git_tool_results_are_compact_and_the_reset_text_is_set_apart() -> None:
    with EnvPool("git", num_workers=1, provider="process", task="create-branch", reward_mode="final") as pool:
        env = tool_env_factory(pool)()
        posed = env.reset(prompt=[{"role": "user", "content": "Do the task."}])
        assert posed.startswith("\n\n") and "feature/login" in posed  # TRL appends it as it is
        result = env.shell("git status --short")
        assert "feature/login" not in result and "[checks_passed: 0/3]" in result


def test_a_worker_that_died_between_rollouts_does_not_fail_the_next_reset() -> None:
    # TRL calls environment.reset() outside any error handling: a raise there ends the step.
    with EnvPool("coding", num_workers=1, provider="process") as pool:
        env = tool_env_factory(pool)()
        env.reset(prompt="p")
        assert env.run_python("print(1)").startswith("1")
        os.kill(pool.workers[0].pid, signal.SIGKILL)
        time.sleep(0.3)
        env.reset(prompt="p")
        assert env.run_python("print(2)").startswith("2") and env.get_reward() == 1.0
        assert pool.stats["crash"] == 1 and pool.workers[0].restarts == 1


@pytest.fixture(scope="module")
def chat_tokenizer():
    from trl.chat_template_utils import qwen3_chat_template

    from openenv_gym.trl.tiny import tiny_tokenizer

    tok = tiny_tokenizer(["git status", "git switch -c feature/login"])
    tok.add_special_tokens({"eos_token": "<|im_end|>", "additional_special_tokens": ["<|im_start|>"]})
    tok.chat_template = qwen3_chat_template
    return tok


class ScriptedTrainer:
    """What EnvRollout needs of GRPOTrainer; the 'model' writes one scripted command per turn."""

    max_completion_length = 400

    def __init__(self, tok, script):
        self.processing_class, self.script, self.turn = tok, script, 0

    def _generate_single_turn(self, inputs, images, multimodal_fields, num_generations):
        text = self.script[min(self.turn, len(self.script) - 1)]
        self.turn += 1
        ids = self.processing_class(text, add_special_tokens=False)["input_ids"]
        return [ids + [self.processing_class.eos_token_id] for _ in inputs], None


def test_a_chat_rollout_keeps_the_chat_format(chat_tokenizer) -> None:
    tok = chat_tokenizer
    script = ["```bash\ngit status\n```", "```bash\ngit branch\n```"]
    with EnvPool("git", num_workers=1, provider="process", task="create-branch", reward_mode="final") as pool:
        rollout = EnvRollout(pool, max_turns=2, show_reset_observation=True)
        out = rollout([[{"role": "user", "content": "Solve the task."}]], ScriptedTrainer(tok, script))
    prompt = tok.decode(out["prompt_ids"][0])
    # The task is the user's words, before the assistant's turn starts.
    assert prompt.index("feature/login") < prompt.index("<|im_start|>assistant")
    completion = tok.decode(out["completion_ids"][0])
    # The observation is a user turn, and the model's next turn opens with the generation prompt.
    assert "<|im_end|>\n<|im_start|>user\nOn branch main" in completion
    assert "<|im_end|>\n<|im_start|>assistant\n```bash\ngit branch" in completion
    # After the last turn nothing is appended: no model turn would read it.
    mask = out["env_mask"][0]
    assert [k for k, _ in itertools.groupby(mask)] == [1, 0, 1]
    assert len(rollout.last_outcomes[0].actions) == 2
