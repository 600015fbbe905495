"""The worker's start-up lines: the ready line's addresses, and the error that stopped it."""

from __future__ import annotations

from openenv_gym.errors import EnvServerError, InvalidDataError
from openenv_gym.protocol.startup import failure_in, failure_line, parse_ready, ready_line, server_argv


def test_ready_line_round_trips_its_addresses() -> None:
    line = ready_line("echo", "unix:///tmp/w.sock", ["tcp://127.0.0.1:7001"], http="http://127.0.0.1:8000")
    assert line.startswith("openenv-gym worker ready: env=echo ")
    assert parse_ready("log prefix | " + line) == ("unix:///tmp/w.sock", ["tcp://127.0.0.1:7001"])
    assert parse_ready(ready_line("echo", None, http="http://127.0.0.1:8000")) == (None, [])
    assert parse_ready("openenv-gym worker failed: {}") is None


def test_the_last_failure_line_is_rebuilt_with_its_type() -> None:
    log = "\n".join([
        failure_line(ValueError("an older start")),
        "Traceback (most recent call last):",
        failure_line(InvalidDataError("data_path 'x.csv' lacks column(s) 'volume'")),
    ])
    error = failure_in(log)
    assert type(error) is InvalidDataError and str(error) == "data_path 'x.csv' lacks column(s) 'volume'"
    plain = failure_in(failure_line(KeyError("spam")))  # not ours: the env's, still a KeyError
    assert isinstance(plain, EnvServerError) and isinstance(plain, KeyError)
    assert str(plain) == "KeyError: 'spam'"


def test_no_or_a_cut_failure_line_names_nothing() -> None:
    assert failure_in("Traceback (most recent call last):\n  ...\nMemoryError") is None
    assert failure_in(failure_line(InvalidDataError("x"))[:-5]) is None  # the log's tail cut it


def test_server_argv_carries_an_idle_timeout() -> None:
    argv = server_argv("echo", "{}", unix="/tmp/w0.sock", idle_timeout=600)
    assert argv[argv.index("--idle-timeout") + 1] == "600.0"
    argv = server_argv("echo", "{}", unix="/tmp/w0.sock", idle_timeout=1234567)
    assert float(argv[argv.index("--idle-timeout") + 1]) == 1234567  # not 1.23457e+06
    # An env's own workers keep sessions forever (their owner stops them).
    argv = server_argv("echo", "{}", unix="/tmp/w0.sock")
    assert argv[argv.index("--idle-timeout") + 1] == "0"
