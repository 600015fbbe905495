"""What the commands share: arguments refused by the parser (exit 2, the flag named), exit codes
in every ``--help``, ports checked before a server starts, and names kept whole in tables."""

from __future__ import annotations

import argparse
import io
import socket

import pytest
from rich.console import Console

from openenv_gym.cli import build_parser
from tests.cli.cli_helpers import run


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every (sub)command's parser, with the words that reach it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _commands(sub, (*path, name))


def _refusal(capsys, *args: str) -> str:
    """Parse ``args`` as the command line would and return argparse's error (exit 2 asserted)."""
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(list(args))
    assert exc.value.code == 2
    return capsys.readouterr().err


def test_every_command_help_states_its_exit_codes() -> None:
    commands = dict(_commands(build_parser()))
    expected = {("list",), ("build",), ("serve",), ("docker", "ps"), ("docker", "logs")}
    assert expected <= commands.keys()
    for path, parser in commands.items():
        epilog = parser.epilog or ""
        assert epilog.startswith("exit codes: 0 ") and "2 bad arguments" in epilog, path


@pytest.mark.parametrize("command", [("list",), ("build",), ("serve",), ("docker", "ps")])
def test_help_output_ends_with_the_exit_codes(command: tuple[str, ...]) -> None:
    out = run(*command, "--help")
    assert out.returncode == 0 and "exit codes: 0" in out.stdout


@pytest.mark.parametrize("command", [("serve", "echo"), ("start", "echo"), ("bench", "echo")])
@pytest.mark.parametrize("value", ["[1]", "notjson", "3"])
def test_env_kwargs_must_be_a_json_object_everywhere(capsys, command, value) -> None:
    err = _refusal(capsys, *command, "--env-kwargs", value)
    assert "argument --env-kwargs: must be a JSON object" in err and "max_steps" in err


def test_env_kwargs_is_parsed_once_to_a_fresh_dict() -> None:
    parser = build_parser()
    first = parser.parse_args(["serve", "echo"]).env_kwargs
    assert first == {} and first is not parser.parse_args(["serve", "echo"]).env_kwargs
    given = parser.parse_args(["start", "echo", "--env-kwargs", '{"max_steps": 3}'])
    assert given.env_kwargs == {"max_steps": 3}


@pytest.mark.parametrize("args, flag", [
    (("serve", "echo", "--port", "99999"), "--port"),
    (("serve", "echo", "--port", "-1"), "--port"),
    (("serve", "echo", "--binary-port", "65536"), "--binary-port"),
    (("start", "echo", "--web", "--web-port", "99999"), "--web-port"),
    (("doctor", "--port", "70000"), "--port"),
    (("serve", "echo", "--max-sessions", "0"), "--max-sessions"),
    (("serve", "echo", "--idle-timeout", "-5"), "--idle-timeout"),
    (("serve", "echo", "--idle-timeout", "nan"), "--idle-timeout"),
    (("start", "echo", "-n", "0"), "-n/--num-workers"),
    (("bench", "echo", "--warmup", "-1"), "--warmup"),
    (("bench", "echo", "--action", "{"), "--action"),
    (("logs", "demo", "--tail", "-3"), "--tail"),
    (("logs", "demo", "--tail", "x"), "--tail"),
    (("stop", "demo", "--timeout", "0"), "--timeout"),
    (("docker", "logs", "c", "--tail", "-1"), "--tail"),
])
def test_out_of_range_numbers_are_refused_by_the_parser(capsys, args, flag) -> None:
    assert f"argument {flag}: must be" in _refusal(capsys, *args)


def test_edge_values_that_mean_something_are_accepted() -> None:
    parser = build_parser()
    args = parser.parse_args(["serve", "echo", "--port", "0", "--idle-timeout", "0",
                              "--max-sessions", "1"])
    assert (args.port, args.idle_timeout, args.max_sessions) == (0, 0.0, 1)  # 0: any port; never
    assert parser.parse_args(["serve", "echo", "--port", "65535"]).port == 65535
    assert parser.parse_args(["logs", "demo", "--tail", "0"]).tail == 0


def test_bad_arguments_exit_two_without_a_traceback() -> None:
    for args in (("serve", "echo", "--env-kwargs", "[1]"), ("serve", "echo", "--port", "99999"),
                 ("start", "echo", "--web", "--web-port", "99999")):
        out = run(*args)
        assert out.returncode == 2 and "Traceback" not in out.stderr, (args, out.stderr)
        assert "error: argument" in out.stderr


@pytest.mark.parametrize("flag", ["--port", "--binary-port"])
def test_serve_on_a_taken_port_exits_one_with_a_fix(flag: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = str(sock.getsockname()[1])
        other = ["--port", "0"] if flag == "--binary-port" else []
        out = run("serve", "echo", flag, port, *other)
    assert out.returncode == 1, out.stderr
    assert f"cannot listen on 127.0.0.1:{port} ({flag})" in out.stderr
    fix = next(line for line in out.stderr.splitlines() if line.startswith("fix:"))
    assert flag in fix and f"openenv-gym doctor --port {port}" in fix


def test_start_on_a_taken_web_port_exits_one_before_any_worker_starts() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = str(sock.getsockname()[1])
        # No engine answers: had the workers been started first, that would be the error.
        out = run("start", "echo", "--provider", "docker", "--web", "--web-port", port,
                  env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert out.returncode == 1 and f"cannot listen on 127.0.0.1:{port} (--web-port)" in out.stderr
    assert "fix:" in out.stderr and "docker" not in out.stderr.lower()


@pytest.mark.parametrize("width", [80, 40])
def test_docker_ps_keeps_long_container_names_whole(width: int) -> None:
    from openenv_gym.cli._ui import print_table
    from openenv_gym.cli.docker import containers_table

    name = "openenv-gym-32319-dk-5f3a9c-docker-w12-" + "x" * 40  # a pool named at --name's limit
    rows = [(name, "echo", "dk-5f3a9c", "32319 (gone)", "running",
             "openenv-gym/echo:0123456789abcdef0123456789abcdef")]
    out = io.StringIO()
    print_table(containers_table(rows), Console(file=out, width=width))
    assert name in out.getvalue(), out.getvalue()
    # Fitted to the width, the other columns were squeezed to nothing, headers and all.
    for cell in ("env", "echo", "status", "running"):
        assert cell in out.getvalue(), out.getvalue()
