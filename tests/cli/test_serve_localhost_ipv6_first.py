"""`serve --host localhost` where the resolver lists ::1 before 127.0.0.1 (glibc's RFC 6724
order once /etc/hosts has "::1 localhost": Debian 12, Fedora; macOS too). Both servers bind
IPv4 for a name without ':', which works, and the refusal's own advice names localhost."""

from __future__ import annotations

import socket

from openenv_gym.cli import envs, main

_real = socket.getaddrinfo


def _v6_first(host, port, family=0, type=0, proto=0, flags=0):
    if host != "localhost":
        return _real(host, port, family, type, proto, flags)
    both = [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", port or 0, 0, 0)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port or 0))]
    return [i for i in both if family in (0, i[0])]


def test_localhost_listed_v6_first_is_served(monkeypatch, capsys) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", _v6_first)
    served = []
    monkeypatch.setattr("openenv_gym.server.main.run_server", lambda *a, **k: served.append(k["host"]))
    assert main(["serve", "echo", "--host", "localhost", "--port", "0"]) == 0, capsys.readouterr().err
    assert served == ["localhost"]


def test_a_v6_only_name_is_still_refused(monkeypatch, capsys) -> None:
    served = []
    monkeypatch.setattr("openenv_gym.server.main.run_server", lambda *a, **k: served.append(k["host"]))
    assert main(["serve", "echo", "--host", "::1", "--port", "0"]) != 0
    assert "not an IPv4 address" in capsys.readouterr().err and not served
