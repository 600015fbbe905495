"""Code that runs *inside* the child interpreter (never imported by the worker).

The worker sends this file's source through ``python -I -S -c`` after an rlimit prelude
(:func:`openenv_gym.envs._exec.python_argv`), so a step costs one interpreter start and
the child needs nothing of openenv_gym. Modes (``sys.argv[1]``):

- ``run CODE_FILE``: execute the code as ``__main__``; an uncaught exception prints its
  traceback (without this runner's frame) and exits 1.
- ``serve PROGRAM_FILE ENTRY_POINT CONTROL_FD STATUS_FD``: execute the program, send an
  empty frame (ready), then answer calls of its entry point: each request is a pickled
  ``(args, kwargs)``, each answer a pickled ``("ok", result)``, ``("raised", text)`` or
  ``("refused", text)`` for a result that is not plain data. The checks themselves run in the worker
  (:mod:`openenv_gym.envs.coding.grader`), out of this process's reach.
- ``repl CONTROL_FD STATUS_FD``: a persistent interpreter; reads cells from the control
  pipe, runs each in one namespace, answers ``{"ok": bool}``.

Requests and answers are frames: an 8-byte big-endian length, then the bytes.
"""

import os
import sys

# Only os and sys at the top: every import here is paid by every step's interpreter start
# (json and traceback cost 11 and 4 ms here); the modes import what they use.


def _print_exc() -> None:
    import traceback

    etype, value, tb = sys.exc_info()
    # Drop this runner's own frames ("<string>", from -c): the user sees only their code.
    while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
        tb = tb.tb_next
    traceback.print_exception(etype, value, tb)


def _exec(source: str, filename: str, namespace: dict) -> None:
    exec(compile(source, filename, "exec"), namespace)


def _fresh_main() -> dict:
    import builtins
    return {"__name__": "__main__", "__builtins__": builtins}


def _run(code_file: str) -> int:
    with open(code_file, encoding="utf-8") as f:
        source = f.read()
    sys.argv = ["<code>"]
    try:
        _exec(source, "<code>", _fresh_main())
    except SystemExit:
        raise
    except BaseException:
        _print_exc()
        return 1
    return 0


def _read_frame(fd: int) -> bytes:
    """One length-prefixed request from the control pipe (EOFError when the parent closed it)."""
    return _read_exact(fd, int.from_bytes(_read_exact(fd, 8), "big"))


def _write_frame(fd: int, data: bytes) -> None:
    """One length-prefixed answer on the status pipe."""
    view = memoryview(len(data).to_bytes(8, "big") + data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd: int, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


# What the grader lets in (``grader.plain_loads``); checked here too, so that a result it
# would refuse gets an answer that says why instead of an unreadable pickle.
_PLAIN = (type(None), bool, int, float, complex, str, bytes)


class _NotPlain(Exception):
    pass


def _plain(value: object, depth: int = 0) -> object:
    """``value`` as plain data: exact builtin types only (a subclass of ``int`` could
    redefine ``==``); numpy scalars become the Python numbers they hold, as ``==`` would
    have treated them. Raises _NotPlain with the reason otherwise."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if depth > 100:
        raise _NotPlain("it is nested more than 100 levels deep")
    if kind in (list, tuple, set, frozenset):
        return kind(_plain(item, depth + 1) for item in value)
    if kind is dict:
        return {_plain(key, depth + 1): _plain(item, depth + 1) for key, item in value.items()}
    if kind.__module__ == "numpy" and getattr(value, "shape", None) == ():
        return _plain(value.item(), depth + 1)  # np.float64(0.5), np.bool_(True)
    raise _NotPlain(f"it contains a {kind.__module__}.{kind.__qualname__}; checks compare plain "
                    "data only (None, bool, int, float, complex, str, bytes, list, tuple, set, "
                    "dict, numpy scalars)")


def _serve(program_file: str, entry_point: str, control_fd: str, status_fd: str) -> int:
    import pickle  # here: the other modes start without it

    control, status = int(control_fd), int(status_fd)
    with open(program_file, encoding="utf-8") as f:
        program = f.read()
    namespace = _fresh_main()
    sys.argv = ["<code>"]
    try:
        _exec(program, "<code>", namespace)
        function = namespace[entry_point]
    except SystemExit:
        raise
    except BaseException:
        _print_exc()
        return 1
    _write_frame(status, b"")  # ready: the program is loaded
    while True:
        try:
            args, kwargs = pickle.loads(_read_frame(control))
        except EOFError:
            return 0
        try:
            answer = ("ok", _plain(function(*args, **kwargs)))
        except _NotPlain as exc:
            answer = ("refused", f"the result is not plain data: {exc}")
        except SystemExit:
            raise
        except BaseException as exc:
            answer = ("raised", _describe(exc))
        sys.stdout.flush()
        sys.stderr.flush()
        _write_frame(status, pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


def _describe(exc: BaseException) -> str:
    try:
        text = f"{type(exc).__name__}: {exc}"
    except BaseException:  # a __str__ that raises is the candidate's problem, not ours
        text = type(exc).__name__
    return text[:500]


def _repl(control_fd: str, status_fd: str) -> int:
    import json

    control, status = int(control_fd), int(status_fd)
    namespace = _fresh_main()
    sys.argv = ["<cell>"]
    cell = 0
    while True:
        try:
            source = _read_frame(control).decode("utf-8")
        except EOFError:
            return 0
        ok = True
        try:
            _exec(source, f"<cell {cell}>", namespace)
        except SystemExit:
            raise
        except BaseException:
            ok = False
            _print_exc()
        cell += 1
        sys.stdout.flush()
        sys.stderr.flush()
        _write_frame(status, json.dumps({"ok": ok}).encode())


def main() -> int:
    mode, args = sys.argv[1], sys.argv[2:]
    return {"run": _run, "serve": _serve, "repl": _repl}[mode](*args)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
