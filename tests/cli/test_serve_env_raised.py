"""`serve` reports an env constructor's own exception as an error with a fix, not a
traceback; a TypeError (its arguments refused) is a usage error, as the arguments the worker
refuses are (tests/cli/)."""

from __future__ import annotations

from openenv_gym.cli._ui import FAILED, USAGE, env_raised
from openenv_gym.errors import env_error
from tests.cli.cli_helpers import run


def test_serve_refuses_an_unknown_gym_env_kwarg_as_echo_does() -> None:
    # Gym-v0 passes what it does not know on: CartPole's constructor raises the TypeError.
    gym = run("serve", "gym", "--port", "0", "--env-kwargs", '{"env_id": "CartPole-v1", "bogus": 1}')
    echo = run("serve", "echo", "--port", "0", "--env-kwargs", '{"bogus": 1}')
    for out in (gym, echo):
        assert out.returncode == 2, out.stderr
        assert "'bogus'" in out.stderr and "--env-kwargs" in out.stderr
        assert "Traceback" not in out.stderr
    assert "cannot make env 'gym'" in gym.stderr


def test_a_constructor_exception_other_than_a_type_error_exits_1(capsys) -> None:
    assert env_raised(env_error(RuntimeError("no license file"), "cannot make env 'x'")) == FAILED
    assert env_raised(env_error(TypeError("got an unexpected keyword argument 'y'"),
                                "cannot make env 'x'")) == USAGE
    assert "no license file" in capsys.readouterr().err


def test_bench_refuses_a_negative_seed_as_a_bad_argument() -> None:
    out = run("bench", "echo", "--seed", "-1", "--steps", "5")
    assert out.returncode == 2 and "--seed" in out.stderr and "Traceback" not in out.stderr


def test_serve_gym_with_id_in_env_kwargs_names_env_id() -> None:
    out = run("serve", "gym", "--port", "0", "--env-kwargs", '{"id": "CartPole-v1"}')
    assert out.returncode == 2, out.stderr
    assert "env_id='CartPole-v1'" in out.stderr and "--env-kwargs" in out.stderr
    assert "multiple values" not in out.stderr and "Traceback" not in out.stderr
