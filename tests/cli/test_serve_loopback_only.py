"""`openenv-gym serve` binds loopback only: its HTTP and binary servers authenticate no one,
so a --host of all interfaces (or of a network interface) is refused, not served silently."""

import pytest

from openenv_gym.cli import main


@pytest.mark.parametrize("host", ["0.0.0.0"])
def test_a_non_loopback_host_is_refused(capsys, host: str) -> None:
    assert main(["serve", "echo", "--host", host, "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "not a loopback address" in err and "127.0.0.1" in err


def test_the_refusal_forwards_the_port_asked_for(capsys) -> None:
    # The SSH tunnel in the fix line named port 8000 whatever --port was.
    assert main(["serve", "echo", "--host", "0.0.0.0", "--port", "9123"]) == 2
    assert "ssh -L 9123:127.0.0.1:9123 HOST" in capsys.readouterr().err
