"""The CLI's shape and the quick commands: help, exit codes, list, doctor, bench."""

from __future__ import annotations

import os
import socket

import pytest

from tests.cli.cli_helpers import run, run_json

COMMANDS = ("list", "serve", "start", "ps", "stop", "logs", "bench", "doctor", "init")


def test_help_lists_every_command_and_no_command_is_a_usage_error() -> None:
    out = run("--help")
    assert out.returncode == 0
    for command in COMMANDS:
        assert command in out.stdout
    assert run().returncode == 2


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_exit_codes_or_usage(command: str) -> None:
    out = run(command, "--help")
    assert out.returncode == 0 and "usage: openenv-gym " + command in out.stdout


def test_unknown_option_is_a_usage_error() -> None:
    out = run("list", "--no-such-option")
    assert out.returncode == 2 and "unrecognized arguments" in out.stderr


def test_list_shows_builtin_envs_and_where_they_run() -> None:
    out = run("list")
    assert out.returncode == 0
    assert "OpenEnv/Echo-v0" in out.stdout and "OpenEnv/Gym-v0" in out.stdout
    assert "process" in out.stdout


def test_list_names_a_missing_program_as_doctor_does(tmp_path) -> None:
    # Without git on PATH, Git-v0 (which has no pip extra) was shown as "none (pip install
    # 'openenv-gym[None]')".
    # (No Docker engine either: with one, Docker would run it.)
    out = run("list", env={"PATH": str(tmp_path), "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"})
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "OpenEnv/Git-v0" in line)
    assert "none (missing git: install git (apt-get install git))" in row
    assert "[None]" not in out.stdout


def test_doctor_reports_python_packages_envs_and_exits_zero_when_core_works() -> None:
    findings = run_json("doctor", "--json")
    by_area = {f["area"]: f for f in findings}
    assert by_area["python"]["status"] == "ok"
    assert by_area["package gymnasium"]["status"] == "ok"
    assert by_area["env echo"]["status"] == "ok" and "process" in by_area["env echo"]["detail"]
    assert "docker engine" in by_area and "ray" in by_area
    from openenv_gym.envs._confine import abi

    landlock = by_area["landlock"]  # what this kernel gives the sandboxes, with its ABI
    assert (landlock["status"] == "ok") == (abi() >= 6) and (f"ABI {abi()}" in landlock["detail"]) == (abi() >= 1)
    from openenv_gym.providers._cgroup import support

    cgroups = by_area["worker cgroups"]  # whether untrusted process workers get Docker's limits
    assert (cgroups["status"] == "ok") == support()[0] and support()[1] in cgroups["detail"]
    from openenv_gym.providers._tmpfs import support as tmpfs_support

    assert (by_area["worker temp folder"]["status"] == "ok") == tmpfs_support()[0]
    from openenv_gym.providers import _forks

    assert (by_area["worker start"]["status"] == "ok") == _forks.available()
    assert all(f["fix"] for f in findings if f["status"] != "ok"), "every problem names its fix"
    table = run("doctor")
    assert table.returncode == 0 and "checks:" in table.stdout


def test_doctor_names_the_fix_for_a_port_in_use() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        findings = run_json("doctor", "--json", "--port", str(port))
    check = next(f for f in findings if f["area"] == f"port {port}")
    assert check["status"] == "warn" and "--port" in check["fix"]


def test_doctor_names_the_fix_when_no_docker_engine_answers() -> None:
    out = run("doctor", "--json", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert out.returncode == 0  # Docker is optional: a warning, not a failure
    import json

    check = next(f for f in json.loads(out.stdout) if f["area"] == "docker engine")
    assert check["status"] == "warn" and "dockerd" in check["fix"]


def test_doctor_says_once_why_no_image_can_be_built(tmp_path) -> None:
    # Without a Dockerfile every image row said "not built (first use builds it)", which
    # it could not.
    from tests.conftest import require_docker

    require_docker()
    out = run("doctor", "--json", env={"OPENENV_GYM_CONTAINERS_DIR": str(tmp_path / "none")})
    import json

    findings = json.loads(out.stdout)
    check = next(f for f in findings if f["area"] == "docker images")
    assert check["status"] == "warn" and "no Dockerfile at" in check["detail"], check
    assert not [f for f in findings if f["area"].startswith("image ")]


def test_doctor_fails_a_tmpdir_too_long_for_worker_sockets(tmp_path) -> None:
    # gym.make refuses it (check_socket_path): doctor said "ok".
    long = tmp_path / ("d" * 60) / ("e" * 60)
    long.mkdir(parents=True)
    out = run("doctor", "--json", env={"TMPDIR": str(long)})
    import json

    check = next(f for f in json.loads(out.stdout) if f["area"] == "runtime folder")
    assert check["status"] == "fail" and "TMPDIR" in check["fix"] and "bytes" in check["detail"]


def test_bench_prints_steps_per_second_and_latency_percentiles(provider: str) -> None:
    result = run_json("bench", "echo", "--provider", provider, "--steps", "60", "--warmup", "5",
                      "--action", '{"message": "hi"}', "--json")
    assert result["provider"] == provider and result["steps"] == 60
    assert result["steps_per_s"] > 0
    lat = result["latency_ms"]
    assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    # echo truncates after 100 steps: 65 steps of one env end no episode
    assert result["episodes"] == 0


def test_bench_vector_env_and_table_output(provider: str) -> None:
    out = run("bench", "gym", "--provider", provider, "--num-envs", "2", "--steps", "40",
              "--warmup", "5", "--env-kwargs", '{"env_id": "CartPole-v1"}')
    assert out.returncode == 0, out.stderr
    assert "env-steps/s" in out.stdout and "p99" in out.stdout and "num_envs=2" in out.stdout


@pytest.mark.parametrize("args", [
    ("bench", "no-such-env"),
    ("bench", "echo", "--env-kwargs", "not json"),
    ("bench", "echo", "--steps", "0"),
])
def test_bench_bad_arguments_are_usage_errors(args: tuple[str, ...]) -> None:
    out = run(*args)
    assert out.returncode == 2 and "error:" in out.stderr


def test_bench_action_the_env_refuses_exits_two_with_the_reason() -> None:
    # A bad --action is a bad argument (tests/cli/test_bench_action_errors.py has the rest).
    out = run("bench", "echo", "--provider", "process", "--steps", "5",
              "--action", '{"message": 5}')
    assert out.returncode == 2 and "--action" in out.stderr
    assert "message: Input should be a valid string" in out.stderr


def test_python_dash_m_openenv_gym_is_the_cli() -> None:
    # For an install whose scripts folder is not on PATH (pip install --user).
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "openenv_gym", "list"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "OpenEnv/Echo-v0" in out.stdout


@pytest.mark.parametrize("args", [(), ("docker",)])
def test_a_missing_command_is_reported_on_stderr(args: tuple[str, ...]) -> None:
    # Exit 2 (bad arguments) with the help on stdout: `openenv-gym > out` filled the file.
    out = run(*args)
    assert out.returncode == 2
    assert out.stdout == "" and "usage: openenv-gym" in out.stderr
