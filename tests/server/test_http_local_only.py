"""Pages of other sites cannot drive a local env server: the Host of a loopback request must
be a local name (DNS rebinding), and a state-changing request with a foreign Origin is refused
(cross-site request forgery). Real servers on 127.0.0.1, raw HTTP."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse

import pytest


def _request(url: str, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        # skip_host: the test names the Host itself (http.client would add its own).
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        sent = {"Host": parts.netloc, **(headers or {})}
        if body is not None:
            sent.setdefault("Content-Type", "application/json")
            sent["Content-Length"] = str(len(body))
        for key, value in sent.items():
            conn.putheader(key, value)
        conn.endheaders(body)
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read() or b"null")
    finally:
        conn.close()


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}", "10.0.0.1:{port}"])
@pytest.mark.parametrize("method, path, body", [("GET", "/web/state", None), ("GET", "/sessions", None),
                                                ("POST", "/reset", b"{}")])
def test_a_foreign_host_name_is_refused(served_echo, host, method, path, body) -> None:
    port = urllib.parse.urlsplit(served_echo.http).port
    status, reply = _request(served_echo.http, method, path, body, {"Host": host.format(port=port)})
    assert status == 403 and reply["error"]["type"] == "InvalidRequestError"
    assert "local names" in reply["error"]["message"]
    assert _request(served_echo.http, "GET", "/sessions")[1] == []  # nothing was created


@pytest.mark.parametrize("request_head", [b"GET /sessions HTTP/1.0\r\n\r\n", b"GET /sessions HTTP/1.1\r\nHost:\r\n\r\n"])
def test_a_request_without_a_host_is_told_to_send_one(served_echo, request_head) -> None:
    # A raw HTTP/1.0 client sends no Host: the advice is to name one, not to fix a wrong name.
    parts = urllib.parse.urlsplit(served_echo.http)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(request_head)
        sock.shutdown(socket.SHUT_WR)
        reply = b"".join(iter(lambda: sock.recv(65536), b""))
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.split()[1] == b"403", reply
    assert "no Host header" in json.loads(body)["error"]["message"]


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}", "localhost.:{port}",
                                  "127.0.0.1", "[::1]:{port}", "app.localhost:{port}",
                                  socket.gethostname() + ":{port}"])
def test_local_host_names_are_served(served_echo, host) -> None:
    port = urllib.parse.urlsplit(served_echo.http).port
    status, reply = _request(served_echo.http, "POST", "/reset", b"{}", {"Host": host.format(port=port)})
    assert status == 200, reply


@pytest.mark.parametrize("origin", ["http://attacker.example", "null", "http://127.0.0.1:1",
                                    "http://localhost:{port}"])
@pytest.mark.parametrize("body, ctype", [(b"", "text/plain"), (b"", None), (b"{}", "application/json")])
def test_a_cross_site_post_is_refused(served_echo, origin, body, ctype) -> None:
    # A cross-site form, or fetch(..., {mode: "no-cors"}) without a body, creates no session.
    port = urllib.parse.urlsplit(served_echo.http).port
    headers = {"Origin": origin.format(port=port)}
    if ctype:
        headers["Content-Type"] = ctype
    status, reply = _request(served_echo.http, "POST", "/reset", body, headers)
    assert status == 403 and "another site" in reply["error"]["message"]
    assert _request(served_echo.http, "GET", "/sessions")[1] == []


def test_same_origin_and_originless_requests_are_served(served_echo) -> None:
    own = served_echo.http  # http://127.0.0.1:PORT: the page's own origin (/web, /docs)
    status, reply = _request(own, "POST", "/reset", b"{}", {"Origin": own})
    assert status == 200
    sid = reply["session_id"]
    status, _ = _request(own, "POST", "/step", json.dumps({"session_id": sid, "action": {"message": "hi"}}).encode())
    assert status == 200  # curl, the Python client: no Origin header
    assert _request(own, "GET", "/web/state", headers={"Origin": "http://attacker.example"})[0] == 200  # reads: the browser keeps them from the other site
    assert _request(own, "DELETE", f"/sessions/{sid}", headers={"Origin": "http://attacker.example"})[0] == 403
    assert _request(own, "DELETE", f"/sessions/{sid}", headers={"Origin": own})[0] == 200


def test_the_pool_web_view_answers_local_names_only() -> None:
    # `openenv-gym start ... --web`: a read-only page, but it shows every worker's actions and
    # observations (agents' code, prompts), which a rebound page of another site must not read.
    from openenv_gym.cli.start import serve_pool_web

    url, stop = serve_pool_web([], "pool test")
    try:
        base = url.removesuffix("/web")
        assert _request(base, "GET", "/web/state", headers={"Host": "attacker.example"})[0] == 403
        status, state = _request(base, "GET", "/web/state")
        assert status == 200 and state["sessions"] == []
    finally:
        stop()
