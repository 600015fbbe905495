"""Bad input over HTTP and over the binary path: always a 4xx or a typed error reply.

Never a 5xx, never a dead worker, never a lost session: after each bad input the server
answers ``/health`` and a session made before it still steps. A bounded schemathesis run
against the served OpenAPI spec looks for server errors the hand-written cases miss.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
from typing import Any, Iterator

import msgpack
import numpy as np
import pytest
import requests

from openenv_gym.protocol.sockets import connect, parse_address, read_message
from openenv_gym.protocol.wire import HEADER, MAX_FRAME, encode
from tests.conftest import ServedEnv
from tests.security.helpers import record

HTTP_TIMEOUT = 30


@pytest.fixture(scope="module")
def cartpole() -> Iterator[ServedEnv]:
    server = ServedEnv("gym", "--env-kwargs", json.dumps({"env_id": "CartPole-v1"}),
                       "--idle-timeout", "600")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def echo() -> Iterator[ServedEnv]:
    server = ServedEnv("echo", "--idle-timeout", "600")
    yield server
    server.stop()


def _session(base: str) -> str:
    r = requests.post(f"{base}/reset", json={"seed": 0}, timeout=HTTP_TIMEOUT)
    assert r.status_code == 200, r.text
    return r.json()["session_id"]


def _still_serving(server: ServedEnv, sid: str, action: Any) -> None:
    assert server.proc.poll() is None, "the server died"
    assert requests.get(f"{server.http}/health", timeout=HTTP_TIMEOUT).status_code == 200
    r = requests.post(f"{server.http}/step", json={"session_id": sid, "action": action},
                      timeout=HTTP_TIMEOUT)
    assert r.status_code == 200, r.text


# ------------------------------------------------------------------------ HTTP

def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


HTTP_CASES: list[tuple[str, str, str, Any, dict[str, str]]] = [
    # (name, method, path, body (str = raw bytes as text, else JSON), headers)
    ("malformed JSON", "POST", "/step", '{"session_id": "x", "action": ', {}),
    ("random bytes as JSON", "POST", "/reset", None, {}),  # filled in by the test (bytes)
    ("JSON that is not an object", "POST", "/step", "[1, 2, 3]", {}),
    ("wrong type: session_id is a number", "POST", "/step", {"session_id": 5, "action": 0}, {}),
    ("wrong type: seed is a string", "POST", "/reset", {"seed": "zero"}, {}),
    ("negative seed", "POST", "/reset", {"seed": -1}, {}),
    ("options not a mapping", "POST", "/reset", {"options": [1]}, {}),
    ("missing action", "POST", "/step", {"session_id": "SID"}, {}),
    ("action outside Discrete(2)", "POST", "/step", {"session_id": "SID", "action": 7}, {}),
    ("action of the wrong kind (text)", "POST", "/step", {"session_id": "SID", "action": "left"}, {}),
    ("action of the wrong shape", "POST", "/step", {"session_id": "SID", "action": [[1, 0]]}, {}),
    ("NaN action", "POST", "/step", '{"session_id": "SID", "action": NaN}', {}),
    ("huge integer action", "POST", "/step", {"session_id": "SID", "action": 10 ** 40}, {}),
    ("deeply nested JSON (100k levels)", "POST", "/step",
     '{"session_id": "SID", "action": ' + _nested(100_000) + "}", {}),
    ("unknown session: step", "POST", "/step", {"session_id": "no-such-session", "action": 0}, {}),
    ("unknown session: reset", "POST", "/reset", {"session_id": "no-such-session"}, {}),
    ("unknown session: state", "GET", "/state?session_id=no-such-session", None, {}),
    ("unknown session: close", "DELETE", "/sessions/no-such-session", None, {}),
    ("state without session", "GET", "/state", None, {}),
    ("huge payload (32 MB JSON)", "POST", "/step",
     '{"session_id": "SID", "action": [' + ",".join(["1"] * (16 << 20)) + "]}", {}),
    ("wrong content type", "POST", "/step", "session_id=SID&action=0",
     {"content-type": "application/x-www-form-urlencoded"}),
    ("unknown path", "GET", "/admin", None, {}),
    ("wrong method", "DELETE", "/reset", None, {}),
]


@pytest.mark.parametrize("case", HTTP_CASES, ids=[c[0] for c in HTTP_CASES])
def test_bad_http_input_is_a_4xx_and_the_server_survives(cartpole: ServedEnv, case) -> None:
    name, method, path, body, headers = case
    sid = _session(cartpole.http)
    kwargs: dict[str, Any] = {"headers": {"content-type": "application/json", **headers}}
    if name == "random bytes as JSON":
        kwargs["data"] = random.Random(0).randbytes(4096)
    elif isinstance(body, str):
        kwargs["data"] = body.replace("SID", sid).encode()
    elif body is not None:
        kwargs["data"] = json.dumps(body).replace("SID", sid).encode()
    r = requests.request(method, cartpole.http + path.replace("SID", sid), timeout=HTTP_TIMEOUT, **kwargs)
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:500])
    if r.headers.get("content-type", "").startswith("application/json") and r.status_code not in (404, 405) \
            or "session" in name:
        error = r.json().get("error") or r.json().get("detail")
        assert error, r.text[:300]
    _still_serving(cartpole, sid, 0)
    kind = r.json().get("error", {}).get("type", "") if r.headers.get("content-type", "").startswith(
        "application/json") else ""
    record("bad_inputs", f"HTTP: {name}", "4xx, server and session survive",
           f"{r.status_code}{' ' + kind if kind else ''}; session still steps", "http")


def test_truncated_http_body_and_slow_client_do_not_hurt(cartpole: ServedEnv) -> None:
    sid = _session(cartpole.http)
    host, port = cartpole.http.removeprefix("http://").split(":")
    for _ in range(20):  # announce 1000 bytes, send 10, hang up
        s = socket.create_connection((host, int(port)), timeout=5)
        s.sendall(b"POST /step HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000\r\n\r\n{\"session_")
        s.close()
    _still_serving(cartpole, sid, 1)
    record("bad_inputs", "HTTP: truncated bodies (20 connections hung up mid-body)",
           "server and session survive", "health 200; session still steps", "http", n=20)


def test_echo_message_too_long_is_422(echo: ServedEnv) -> None:
    sid = _session(echo.http)
    r = requests.post(f"{echo.http}/step", json={"session_id": sid, "action": {"message": "x" * (1 << 20)}},
                      timeout=HTTP_TIMEOUT)
    assert r.status_code == 422 and r.json()["error"]["type"] == "InvalidActionError", r.text[:300]
    _still_serving(echo, sid, {"message": "ok"})
    record("bad_inputs", "HTTP: Echo message over its max length (1 MiB)", "422",
           "422 InvalidActionError; session still steps", "http")


# ------------------------------------------------------------------------ binary

def _raw(address: str) -> socket.socket:
    return connect(address, timeout=10.0)


def _frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


def _ndarray_ext(dtype: str, shape: tuple, data: bytes) -> msgpack.ExtType:
    head = msgpack.packb((dtype, shape))
    return msgpack.ExtType(1, struct.pack("<H", len(head)) + head + data)


def _binary_cases(sid: str) -> list[tuple[str, bytes, str]]:
    """(name, bytes to send, expected error type) — each answered on the same connection."""
    pack = lambda m: _frame(msgpack.packb(m, use_bin_type=True))  # noqa: E731
    return [
        ("random bytes in a frame", _frame(random.Random(1).randbytes(512)), "ProtocolError"),
        ("msgpack that is not a map", pack([1, 2, 3]), "InvalidRequestError"),
        ("no op", pack({"sid": sid}), "InvalidRequestError"),
        ("op of the wrong type", pack({"op": 5}), "InvalidRequestError"),
        ("op of an unhashable type", pack({"op": [1, 2]}), "InvalidRequestError"),
        ("unknown op", pack({"op": "rm -rf"}), "InvalidRequestError"),
        ("sid of the wrong type", pack({"op": "step", "sid": 5, "action": 0}), "InvalidRequestError"),
        ("unknown session", pack({"op": "step", "sid": "nope", "action": 0}), "SessionNotFoundError"),
        ("action outside the space", pack({"op": "step", "sid": sid, "action": 9}), "InvalidActionError"),
        ("action of the wrong kind", pack({"op": "step", "sid": sid, "action": {"x": 1}}), "InvalidActionError"),
        ("private attribute", pack({"op": "get_attr", "sid": sid, "name": "__class__"}), "InvalidRequestError"),
        ("nested batch", pack({"op": "batch", "calls": [{"op": "batch", "calls": []}]}), "InvalidRequestError"),
        ("unknown msgpack extension", _frame(msgpack.packb({"op": "step", "sid": sid,
                                                             "action": msgpack.ExtType(7, b"x")})), "ProtocolError"),
        ("object-dtype array", _frame(msgpack.packb({"op": "step", "sid": sid,
                                                     "action": _ndarray_ext("|O", (1,), b"\0" * 8)})), "ProtocolError"),
        ("array shape/bytes mismatch", _frame(msgpack.packb({"op": "step", "sid": sid,
                                                             "action": _ndarray_ext("<i8", (1000,), b"\0" * 8)})), "ProtocolError"),
        ("bogus dtype", _frame(msgpack.packb({"op": "step", "sid": sid,
                                              "action": _ndarray_ext("zz", (1,), b"\0")})), "ProtocolError"),
        ("msgpack string announcing 4 GiB", _frame(b"\xdb\xff\xff\xff\xf0abc"), "ProtocolError"),
        ("deeply nested msgpack (100k levels)", _frame(b"\x91" * 100_000 + b"\xc0"), "ProtocolError"),
        ("frame over the size limit", HEADER.pack(MAX_FRAME + 1) + b"\0" * 1024, "ProtocolError"),
    ]


def _binary_send(sock: socket.socket, data: bytes, oversized: bool) -> dict:
    if oversized:  # the server drains what was announced: send it all
        sock.sendall(data)
        remaining = MAX_FRAME + 1 - (len(data) - HEADER.size)
        chunk = b"\0" * (1 << 20)
        while remaining > 0:
            sock.sendall(chunk[:remaining])
            remaining -= len(chunk)
    else:
        sock.sendall(data)
    return read_message(sock)


@pytest.mark.parametrize("provider_name", ["process", pytest.param("docker", marks=pytest.mark.docker)])
def test_bad_binary_input_gets_typed_replies_on_the_same_connection(provider_name: str, cartpole: ServedEnv) -> None:
    from openenv_gym.client.transport import BinaryClient

    if provider_name == "docker":
        from tests.conftest import require_docker
        from openenv_gym.providers.docker import DockerProvider

        require_docker()
        provider = DockerProvider()
        [worker] = provider.start("gym", env_kwargs={"env_id": "CartPole-v1"})
        address, alive = worker.address, worker.alive
    else:
        provider = worker = None
        address, alive = cartpole.binary, lambda: cartpole.proc.poll() is None
    try:
        client = BinaryClient(address, 30.0)
        sid = client.request({"op": "reset", "seed": 0})["sid"]
        sock = _raw(address)
        cases = _binary_cases(sid)
        for name, data, expected in cases:
            reply = _binary_send(sock, data, oversized=name == "frame over the size limit")
            assert reply["ok"] is False and reply["error"]["type"] == expected, (name, reply)
            # The same connection is still in frame; the session still steps.
            out = client.request({"op": "step", "sid": sid, "action": 1})
            assert out["obs"].shape == (4,)
            if out["terminated"] or out["truncated"]:  # a new episode, as a trainer starts one
                client.request({"op": "reset", "sid": sid, "seed": 0})
            record("bad_inputs", f"binary: {name}", f"typed {expected}; connection, worker, session survive",
                   f"{reply['error']['type']}: {reply['error']['message'][:60]}", provider_name)
        sock.close()
        # Truncated frames and garbage headers, each on its own connection, then hang up.
        for data in (HEADER.pack(1000) + b"\x81", HEADER.pack(MAX_FRAME - 1), b"\x01\x02",
                     random.Random(2).randbytes(3)):
            s = _raw(address)
            s.sendall(data)
            s.close()
        assert alive()
        assert client.request({"op": "health"})["status"] == "ok"
        assert client.request({"op": "step", "sid": sid, "action": 0})["obs"].shape == (4,)
        record("bad_inputs", "binary: truncated frames and partial headers, then hang-up",
               "worker and session survive", "worker alive; session still steps", provider_name, n=4)
        client.drop()
    finally:
        if provider is not None:
            provider.stop_all([worker])


# ------------------------------------------------------------------------ schemathesis

@pytest.mark.parametrize("env_args", [("echo",), ("gym", "--env-kwargs", '{"env_id": "CartPole-v1"}')],
                         ids=["echo", "gym-cartpole"])
def test_schemathesis_finds_no_server_error(env_args: tuple[str, ...], tmp_path) -> None:
    """Property-based requests from the OpenAPI spec: 0 server errors (bounded run)."""
    exe = shutil.which("schemathesis") or shutil.which("st")
    if exe is None:
        pytest.fail("schemathesis is missing: pip install -e '.[dev]'")
    server = ServedEnv(*env_args, "--idle-timeout", "30")
    try:
        examples = os.environ.get("OPENENV_GYM_SCHEMATHESIS_EXAMPLES", "25")
        proc = subprocess.run(
            [exe, "run", f"{server.http}/openapi.json", "--checks", "not_a_server_error",
             "-n", examples, "--exclude-path", "/web/events", "--request-timeout", "20", "--seed", "7",
             "--report", "ndjson", "--report-ndjson-path", str(tmp_path / "events.ndjson")],
            capture_output=True, text=True, timeout=600, env=dict(os.environ, NO_COLOR="1"))
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-4000:]
        assert server.proc.poll() is None
        generated = 0
        for line in out.splitlines():
            if "generated" in line and "passed" in line:
                generated = int(line.strip().split()[0])
        assert generated > 0, out[-2000:]
    finally:
        server.stop()
    record("bad_inputs", f"schemathesis over /openapi.json ({env_args[0]})", "0 server errors",
           f"{generated} generated requests, 0 server errors", "http", n=generated)
