"""``openenv-gym serve`` as two processes: the one the user started supervises the server.

The server runs Coding and Git steps as children in sessions of their own. Killed with
SIGKILL (or by the OOM killer) a server can end none of them: they were re-parented to init
and ran on past their deadline. So the process the user started forks the server and stays
small: it is the subreaper of everything the server starts, ends what the server left
running once it has exited however it exited, and passes the first signal that stops a
server on to it (a second one kills it: "now", without uvicorn's tracebacks); a Ctrl-Z
stops the server with it, and ``fg`` or ``bg`` continue both. The server watches its
supervisor in turn (``run_server(owner_pid=...)``): when the supervisor is killed, the
server stops and ends its steps. A process provider's workers get the same from the fork
server (:mod:`openenv_gym.server.forkserver`).

Example:
    >>> supervised(lambda owner: 0)  # doctest: +SKIP
    0
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import traceback
from typing import Callable

from openenv_gym.envs._subreaper import PR_SET_CHILD_SUBREAPER, end_orphans, prctl

__all__ = ["supervised"]

#: Signals that stop the server, as the server is sent them (a closed terminal: SIGTERM).
_FORWARDED = {signal.SIGINT: signal.SIGINT, signal.SIGTERM: signal.SIGTERM,
              signal.SIGHUP: signal.SIGTERM}
#: Seconds the supervisor keeps ending what the server left (a process stuck in the kernel
#: is not waited for longer).
_SWEEP_TIMEOUT = 5.0


def supervised(serve: Callable[[int | None], int]) -> int:
    """Run ``serve`` in a child process, supervised by this one.

    Args:
        serve: Serves until stopped; called in the child with this process's pid (the owner
            it must stop without), and returns an exit code.

    Returns:
        The child's exit code; :data:`~._ui.FAILED` (with a line on stderr) when a signal
        killed it. Where this process cannot be a subreaper (not Linux), ``serve(None)``'s,
        run here.
    """
    if not hasattr(os, "fork") or not prctl(PR_SET_CHILD_SUBREAPER, 1):
        return serve(None)
    sys.stdout.flush()
    sys.stderr.flush()
    owner = os.getpid()
    pid = os.fork()
    if pid == 0:
        _run_server(serve, owner)
    return _supervise(pid)


def _run_server(serve: Callable[[int | None], int], owner: int) -> None:
    """The child: serve, then exit with its code (never returns into the caller's stack)."""
    code = 1
    try:
        # A group of its own: a Ctrl-C in the terminal reaches the foreground group, so the
        # supervisor only, which passes it on. In the same group the server took it twice,
        # and uvicorn treats a second one as "quit now", tracebacks and all.
        os.setpgid(0, 0)
        code = serve(owner)
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:  # stopped before the server put its handlers in place
        code = 130
    except BaseException:  # noqa: BLE001 - reported as the caller would have
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _supervise(server: int) -> int:
    """Wait for the server, pass stop signals on to it, then end what it left running."""
    from openenv_gym.cli._ui import err_console, error

    with contextlib.suppress(OSError):  # either side may set it first: both do
        os.setpgid(server, server)

    asked: list[int] = []

    def forward(sig: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            # A second one means "now", as uvicorn reads a second Ctrl-C; passed on, uvicorn
            # cancelled its tasks and printed their tracebacks. Killed instead: what the server
            # leaves is ended below all the same.
            os.kill(server, signal.SIGKILL if asked else _FORWARDED[signal.Signals(sig)])
        asked.append(sig)

    def suspend(_sig: int, _frame: object) -> None:
        # The server's group is not the terminal's foreground one: a Ctrl-Z stopped this
        # process alone, and the server served on. Stop it first, then this one as the
        # terminal would have (the shell sees a job stopped by SIGTSTP).
        with contextlib.suppress(OSError):
            os.killpg(server, signal.SIGTSTP)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)  # returns once continued (fg, bg, kill -CONT)
        signal.signal(signal.SIGTSTP, suspend)

    def resume(_sig: int, _frame: object) -> None:
        # `fg` and `bg` continue the job's group, which the server is not in.
        with contextlib.suppress(OSError):
            os.killpg(server, signal.SIGCONT)

    for sig in _FORWARDED:
        if sig == signal.SIGHUP and signal.getsignal(sig) == signal.SIG_IGN:
            # Started under `nohup` (or by a shell that ignores it), to outlive its terminal:
            # the server ignores it too (inherited), and closing the terminal must not stop it.
            continue
        signal.signal(sig, forward)
    signal.signal(signal.SIGTSTP, suspend)
    signal.signal(signal.SIGCONT, resume)
    while True:
        pid, status = os.waitpid(-1, 0)  # also reaps what the server's orphans left here
        if pid == server:
            break
    left = _end_adopted()
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return code
    if len(asked) > 1 and code == -signal.SIGKILL:
        err_console.print("stopped at once (asked twice)")
        return 128 + asked[0]
    name = signal.Signals(-code).name
    return error(f"the server was killed by {name}"
                 + (f"; ended {left} process(es) it left running" if left else ""),
                 "if nobody sent it, the kernel's OOM killer may have: `dmesg | grep -i oom`")


def _end_adopted() -> int:
    """SIGKILL and reap every process re-parented here (a step's child and its group, once
    the server is gone); returns how many."""
    ended: set[int] = set()
    deadline = time.monotonic() + _SWEEP_TIMEOUT
    while time.monotonic() < deadline:
        found = end_orphans()
        if not found:
            break
        ended.update(found)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        time.sleep(0.01)
    return len(ended)
