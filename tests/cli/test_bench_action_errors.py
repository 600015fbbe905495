"""`openenv-gym bench ENV --action JSON` with an action the env refuses: a bad argument, so
exit 2 with an error and a fix that name ``--action`` (the env's own words inside). It exited
1 with "benchmark failed" and "check the env and its kwargs", or, with ``--num-envs`` above 1,
ended in a KeyError traceback, or silently benchmarked another action (1.5 cast to 1)."""

from __future__ import annotations

import pytest
from gymnasium import spaces

from openenv_gym.cli import bench, main
from openenv_gym.errors import InvalidActionError
from tests.cli.cli_helpers import run

CARTPOLE = '{"env_id": "CartPole-v1"}'


@pytest.mark.parametrize("env, kwargs, action, num_envs, says", [
    # An unknown field and a field of the wrong type (the env's typed error, quoted).
    ("coding", "{}", '{"code": "print(1)", "nosuch": 1}', 1, "nosuch: Extra inputs are not permitted"),
    ("coding", "{}", '{"code": 5}', 1, "code: Input should be a valid string"),
    ("echo", "{}", '"hi"', 1, "action must be a mapping with fields (message), got str"),
    ("gym", CARTPOLE, "5", 1, "is not in the action space Discrete(2)"),
    # Several envs: the same refusals, where a KeyError traceback (a field missing) or a
    # TypeError/ValueError ("benchmark failed") came out, or 1.5 was benchmarked as 1.
    ("echo", "{}", '{"message": 5}', 2, "message: Input should be a valid string"),
    ("echo", "{}", '{"nosuch": 1}', 2, "no field 'nosuch'"),
    ("echo", "{}", '{"message": "x", "nosuch": 1}', 2, "no field 'nosuch'"),
    ("echo", "{}", '"hi"', 2, "action must be a mapping with fields (message), got str"),
    ("gym", CARTPOLE, '"x"', 2, "is not in the action space Discrete(2)"),
    ("gym", CARTPOLE, "1.5", 2, "must be integers"),
])
def test_an_action_the_env_refuses_is_a_usage_error_naming_action(env, kwargs, action, num_envs,
                                                                  says) -> None:
    out = run("bench", env, "--provider", "process", "--steps", "2", "--warmup", "0",
              "--num-envs", str(num_envs), "--env-kwargs", kwargs, "--action", action)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and "benchmark failed" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    error = next(line for line in lines if line.startswith("error:"))
    fix = next(line for line in lines if line.startswith("fix:"))
    assert error.startswith("error: --action ") and f"was refused by {env}" in error, error
    assert says in error, error
    assert "--action" in fix and "leave --action out to sample" in fix, fix


def test_the_fix_names_the_fields_of_a_mapping_action() -> None:
    out = run("bench", "coding", "--provider", "process", "--steps", "2", "--warmup", "0",
              "--action", '{"code": "print(1)", "nosuch": 1}')
    assert out.returncode == 2, out.stderr
    assert "fix: give --action a JSON object of its action's fields (code, timeout)" in out.stderr


def test_several_envs_take_an_action_that_leaves_a_field_to_its_default() -> None:
    # Coding's timeout has a default: one env takes {"code": ...}; several ended in
    # KeyError: 'timeout' (the batch was built from the space's fields, not the action's).
    out = run("bench", "coding", "--provider", "process", "--steps", "2", "--warmup", "0",
              "--num-envs", "2", "--action", '{"code": "print(1)"}', "--json")
    assert out.returncode == 0, out.stderr
    assert '"num_envs": 2' in out.stdout


class _Env:
    """A stand-in env: Discrete(2) actions; ``step`` refuses from call ``refuse_from`` on."""

    def __init__(self, refuse_from: int, error: Exception) -> None:
        self.action_space = spaces.Discrete(2)
        self.refuse_from, self.error, self.calls, self.closed = refuse_from, error, 0, False

    def reset(self, seed=None):
        return 0, {}

    def step(self, action):
        self.calls += 1
        if self.calls > self.refuse_from:
            raise self.error
        return 0, 0.0, False, False, {}

    def close(self) -> None:
        self.closed = True


def _bench_with(monkeypatch, env: _Env, *args: str) -> int:
    monkeypatch.setattr(bench, "make_env", lambda *a, **k: env)
    code = main(["bench", "echo", "--provider", "process", "--steps", "5", "--warmup", "0", *args])
    assert env.closed
    return code


def test_an_action_refused_only_after_some_steps_says_at_which(monkeypatch, capsys) -> None:
    # A move the env takes in some states only (illegal once made): still --action's fault.
    env = _Env(3, InvalidActionError("that square is taken"))
    assert _bench_with(monkeypatch, env, "--action", "1") == 2
    err = capsys.readouterr().err
    assert "error: --action 1 was refused by echo at step 4, after taking it 3 times" in err, err
    assert "that square is taken" in err and "leave --action out" in err, err


def test_a_sampled_action_refused_is_still_the_envs_failure(monkeypatch, capsys) -> None:
    # No --action: the env refused an action of its own action space, exit 1 as before.
    env = _Env(0, InvalidActionError("refused a sample"))
    assert _bench_with(monkeypatch, env) == 1
    err = capsys.readouterr().err
    assert "benchmark failed: InvalidActionError: refused a sample" in err and "--action" not in err


def test_other_errors_with_an_action_given_are_still_failures(monkeypatch, capsys) -> None:
    env = _Env(0, ValueError("the env broke"))
    assert _bench_with(monkeypatch, env, "--action", "1") == 1
    err = capsys.readouterr().err
    assert "benchmark failed: ValueError: the env broke" in err and "--action" not in err
