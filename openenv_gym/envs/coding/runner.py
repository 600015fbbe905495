"""Code that runs *inside* the child interpreter (never imported by the worker).

The worker sends this file's source through ``python -I -c`` after an rlimit prelude
(:func:`openenv_gym.envs._exec.python_argv`), so a step costs one interpreter start and
the child needs nothing of openenv_gym. Modes (``sys.argv[1]``):

- ``run CODE_FILE``: execute the code as ``__main__``; an uncaught exception prints its
  traceback (without this runner's frame) and exits 1.
- ``check PROGRAM_FILE PLAN_FILE RESULTS_FILE PER_CHECK_SECONDS``: execute the program,
  then each statement of the test plan in its namespace; every check that passes
  appends its index to the results file. A check that raises or overruns its alarm
  fails alone; an early exit of the process fails the checks not yet reported.
- ``repl CONTROL_FD STATUS_FD``: a persistent interpreter; reads length-prefixed cells
  from the control pipe, runs each in one namespace, answers ``{"ok": bool}`` lines.
"""

import json
import os
import signal
import sys
import traceback


def _print_exc() -> None:
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


class _CheckTimeout(BaseException):
    """Raised by the alarm when one check overruns (BaseException: `except Exception` in
    the candidate cannot swallow it)."""


def _on_alarm(signum, frame):
    raise _CheckTimeout()


def _check(program_file: str, plan_file: str, results_file: str, per_check: str) -> int:
    with open(program_file, encoding="utf-8") as f:
        program = f.read()
    with open(plan_file, encoding="utf-8") as f:
        plan = json.load(f)
    namespace = _fresh_main()
    sys.argv = ["<code>"]
    try:
        _exec(program, "<code>", namespace)
        _exec(plan["preamble"], "<test>", namespace)
        namespace["candidate"] = namespace[plan["entry_point"]]
    except SystemExit:
        raise
    except BaseException:
        _print_exc()
        return 1
    signal.signal(signal.SIGALRM, _on_alarm)
    failed = 0
    index = 0
    for source, is_check in plan["plan"]:
        signal.setitimer(signal.ITIMER_REAL, float(per_check))
        try:
            _exec(source, "<test>", namespace)
            ok = True
        except _CheckTimeout:
            ok = False
            print(f"check {index} timed out after {per_check} s: {source[:200]}", file=sys.stderr)
        except SystemExit:
            raise
        except BaseException as exc:
            ok = False
            if is_check:
                print(f"check {index} failed ({type(exc).__name__}: {exc}): {source[:200]}",
                      file=sys.stderr)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if is_check:
            if ok:
                # Opened per check: a crash later keeps what was already proven.
                fd = os.open(results_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                os.write(fd, f"{index}\n".encode())
                os.close(fd)
            else:
                failed += 1
            index += 1
    return 1 if failed else 0


def _read_exact(fd: int, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def _repl(control_fd: str, status_fd: str) -> int:
    control, status = int(control_fd), int(status_fd)
    namespace = _fresh_main()
    sys.argv = ["<cell>"]
    cell = 0
    while True:
        try:
            size = int.from_bytes(_read_exact(control, 8), "big")
            source = _read_exact(control, size).decode("utf-8")
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
        os.write(status, (json.dumps({"ok": ok}) + "\n").encode())


def main() -> int:
    mode, args = sys.argv[1], sys.argv[2:]
    return {"run": _run, "check": _check, "repl": _repl}[mode](*args)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
