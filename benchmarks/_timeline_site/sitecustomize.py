"""Worker-side stamps for ``benchmarks/bench_pong_timeline.py`` (not part of the package).

Python imports ``sitecustomize`` at start-up from the path; the benchmark puts this folder on
``PYTHONPATH`` and names a folder in ``OPENENV_GYM_TIMELINE_DIR`` before its vector env starts
the fork server, so every worker forked from it inherits these patches. Each served request that
stepped an Atari env leaves one row of ``time.perf_counter_ns()`` stamps (the monotonic clock,
the same in every process): request read, env step start and end, reply send start and end.
"""

from __future__ import annotations

import os
import sys
import time


def _install(folder: str) -> None:
    import socket

    import numpy as np

    import openenv_gym.envs.atari.env as atari
    import openenv_gym.server.binary as binary
    from openenv_gym.protocol import sockets

    stamp = time.perf_counter_ns
    now: dict[str, int] = {}
    rows: list[tuple[int, ...]] = []

    read = sockets.FrameReader.read

    def timed_read(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        frame = read(self, *args, **kwargs)
        now.clear()
        now["read"] = stamp()
        return frame

    step = atari.AtariEnv.step

    def timed_step(self, action):  # type: ignore[no-untyped-def]
        now["env0"] = stamp()
        result = step(self, action)
        now["env1"] = stamp()
        return result

    sendall = socket.socket.sendall
    serve = binary._Handler._serve

    class _Stamped:
        """The handler's socket, stamping around the reply's ``sendall``."""

        def __init__(self, sock: socket.socket) -> None:
            self._sock = sock

        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(self._sock, name)

        def sendall(self, data: bytes) -> None:
            start = stamp()
            sendall(self._sock, data)
            if "env0" in now:  # a request that stepped the env (not a reset or a spec)
                rows.append((now["read"], now["env0"], now["env1"], start, stamp()))
                if len(rows) % 100 == 0:
                    np.save(os.path.join(folder, f"{os.getpid()}.npy"), np.array(rows, np.int64))

    def stamped_serve(self, sock, *args, **kwargs):  # type: ignore[no-untyped-def]
        return serve(self, _Stamped(sock), *args, **kwargs)

    sockets.FrameReader.read = timed_read
    atari.AtariEnv.step = timed_step
    binary._Handler._serve = stamped_serve


_FOLDER = os.environ.get("OPENENV_GYM_TIMELINE_DIR")
if _FOLDER and "openenv_gym.server.forkserver" in sys.orig_argv:
    _install(_FOLDER)
