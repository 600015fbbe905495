"""Hostile bytes on the binary path's new types (numpy scalars, ext 3; tuples): a peer's frame
costs the decoder neither C stack nor memory per level of tuple nesting, the encoder's scalar
cache does not grow with dtypes a peer picks, and numpy scalars a peer sends do not break the
live view of the worker's other sessions."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tracemalloc

import msgpack
import numpy as np

from openenv_gym.envs.echo.env import EchoEnv
from openenv_gym.protocol import wire
from openenv_gym.protocol.wire import HEADER, decode, encode
from openenv_gym.server.service import EnvService


def _nested(value: object, depth: int) -> object:
    for _ in range(depth):
        value = (value,)
    return value


def test_nested_tuples_decode_in_a_small_thread_stack() -> None:
    # A worker started under `ulimit -s unlimited` gives its connection threads 2 MiB stacks
    # (glibc): 64 nested unpackb calls (~45 KiB each) segfaulted it, every session with it.
    code = textwrap.dedent("""
        import threading
        from openenv_gym.protocol.wire import decode, encode
        value = 1
        for _ in range(64):
            value = (value,)
        frame = encode({"op": "health", "x": value})
        threading.stack_size(2 * 1024 * 1024)
        out = []
        t = threading.Thread(target=lambda: out.append(decode(frame[4:])["x"] == value))
        t.start(); t.join()
        print(out)
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"decoder crashed (exit {run.returncode}): {run.stderr[-500:]}"
    assert run.stdout.strip() == "[True]"


def test_nested_tuples_cost_no_copy_per_level() -> None:
    # Each level was an ext payload copied out of its parent and alive while the level below
    # was unpacked: a 16 MiB frame of 64 levels took ~1 GiB (a Docker worker's whole limit).
    frame = encode({"op": "health", "x": _nested(b"\x01" * (2 << 20), 64)})[HEADER.size:]
    tracemalloc.start()
    try:
        message = decode(frame)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(message["x"]) == 1
    assert peak < 3 * len(frame), f"decoding a {len(frame)}-byte frame took {peak} bytes"


def test_a_tuple_mark_out_of_place_is_a_protocol_error() -> None:
    mark = msgpack.ExtType(4, b"")
    for bad in ({"x": mark}, {"x": [1, mark]}, {mark: 1}, {"x": msgpack.ExtType(4, msgpack.packb([1]))}):
        try:
            decode(msgpack.packb(bad))
        except wire.ProtocolError:
            continue
        raise AssertionError(f"{bad!r} was accepted")
    assert decode(msgpack.packb({"k": {(mark, 1, 2): [mark]}}))["k"] == {(1, 2): ()}


def test_the_scalar_cache_does_not_grow_with_a_peers_dtypes() -> None:
    # datetime64 units (M8[1s], M8[2s], ...) are dtypes without end that all hash alike: kept
    # by dtype, each became an entry for good and each lookup scanned them all (O(n^2)).
    before = len(wire._SCALAR_HEADS)
    values = [np.zeros(1, f"M8[{k}s]")[0] for k in range(1, 1001)]
    values += [np.str_("x" * k) for k in range(1, 101)] + [np.bytes_(b"y" * k) for k in range(1, 101)]
    back = decode(encode({"v": values})[HEADER.size:])["v"]
    assert [v.dtype for v in back] == [v.dtype for v in values]
    assert len(wire._SCALAR_HEADS) <= before + 5


def test_a_numpy_scalar_in_an_action_leaves_the_live_view_working() -> None:
    service = EnvService(EchoEnv, env_name="echo", idle_timeout=None)
    try:
        other = service.handle({"op": "reset"})["sid"]
        sid = service.handle({"op": "reset"})["sid"]
        for message in (np.bytes_(b"hello"), np.str_("hi")):
            reply = service.handle({"op": "step", "sid": sid, "action": {"message": message}})
            assert reply["ok"], reply
        service.handle({"op": "set_attr", "sid": sid, "name": "when", "value": np.datetime64(1, "s")})
        web = service.handle({"op": "web"})
        assert web["ok"], web
        json.dumps(web["web"])
        assert {s["id"] for s in web["web"]["sessions"]} == {sid, other}
    finally:
        service.shutdown()
