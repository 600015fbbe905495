"""`openenv-gym serve ENV --port N --binary-port N` is refused as bad arguments (exit 2),
before anything binds."""

import socket

from openenv_gym.cli import main


def test_the_same_port_for_both_servers_is_refused(capsys) -> None:
    with socket.socket() as s:  # a port free now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["serve", "echo", "--port", str(port), "--binary-port", str(port)]) == 2
    assert "--binary-port" in capsys.readouterr().err
