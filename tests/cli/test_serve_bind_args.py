"""What `openenv-gym serve` says about where it cannot listen: the same port twice, or a host
that is not this machine (not "pick a free port"); bad arguments all (exit 2)."""

import socket

from openenv_gym.cli import main


def test_the_same_port_for_both_servers_is_refused(capsys) -> None:
    with socket.socket() as s:  # a port free now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["serve", "echo", "--port", str(port), "--binary-port", str(port)]) == 2
    assert "--binary-port" in capsys.readouterr().err


def test_a_host_that_is_not_this_machine_is_named_not_the_port(capsys) -> None:
    # A name that resolves to nothing (.invalid, RFC 2606): the bind fails on the host.
    assert main(["serve", "echo", "--host", "no-such-host.invalid", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "--host must be an address of this machine" in err and "pick a free port" not in err


def test_a_host_that_is_not_loopback_is_refused_before_its_port(capsys) -> None:
    # 192.0.2.1 (TEST-NET-1): refused as no loopback address, whatever the port says.
    assert main(["serve", "echo", "--host", "192.0.2.1", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "not a loopback address" in err and "pick a free port" not in err


def test_an_ipv6_host_is_named_not_a_traceback(capsys) -> None:
    # The pre-bind check took ::1, and the binary server (IPv4 only) then raised gaierror.
    # The servers listen on IPv4 loopback only: a usage error, as a non-loopback host is.
    assert main(["serve", "echo", "--host", "::1", "--port", "0"]) == 2
    assert "--host must be an address of this machine" in capsys.readouterr().err
