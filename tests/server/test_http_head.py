"""HEAD works wherever GET does (RFC 9110 §9.3.2): the GET's status and headers, no body; as
`curl -I` and health monitors use it (tests/server/)."""

from __future__ import annotations

import pytest
import requests


@pytest.mark.parametrize("path", ["/health", "/spec", "/sessions", "/docs", "/web", "/web/state",
                                  "/openapi.json"])
def test_head_answers_as_get_without_a_body(served_echo, path: str) -> None:
    got = requests.get(served_echo.http + path, timeout=10)
    head = requests.head(served_echo.http + path, timeout=10)
    assert got.status_code == 200
    assert head.status_code == 200, head.headers
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]


def test_head_keeps_the_get_routes_errors(served_echo) -> None:
    assert requests.head(served_echo.http + "/state", params={"session_id": "nope"},
                         timeout=10).status_code == 404
    assert requests.head(served_echo.http + "/no-such-path", timeout=10).status_code == 404
    assert requests.head(served_echo.http + "/reset", timeout=10).status_code == 405


def test_head_of_the_event_stream_does_not_wait_for_it(served_echo) -> None:
    assert requests.head(served_echo.http + "/web/events", timeout=10).status_code == 405


def test_the_pool_web_view_answers_head_as_get() -> None:
    # `openenv-gym start ... --web` serves the same page: the same HEAD rule.
    from openenv_gym.cli.start import serve_pool_web

    url, stop = serve_pool_web([], "pool test")
    try:
        head = requests.head(url.removesuffix("/web") + "/web/state", timeout=10)
        get = requests.get(url.removesuffix("/web") + "/web/state", timeout=10)
        assert (head.status_code, head.content) == (200, b"")
        assert head.headers["content-length"] == get.headers["content-length"]
        assert requests.head(url.removesuffix("/web") + "/web/state", timeout=10,
                             headers={"Host": "attacker.example"}).status_code == 403
    finally:
        stop()
