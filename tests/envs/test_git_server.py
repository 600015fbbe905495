"""The Git-v0 env's in-worker git server and requests the agent gets wrong on purpose."""

from __future__ import annotations

import socket

from openenv_gym.envs._exec import held_start
from openenv_gym.envs.git.server import GitHttpServer


def _send(port: int, request: bytes, read: bool = True) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        if not read:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            return b""  # closed with RST before the reply: the server's write fails
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_malformed_requests_leave_nothing_on_the_workers_log(tmp_path, capfd) -> None:
    """The worker's stderr is the container's log, which Docker keeps on the host's disk:
    a command of the agent sent one malformed request after another to its git server and
    each printed a traceback there (7 MB in an 8 s step, measured)."""
    server = GitHttpServer(str(tmp_path))
    try:
        capfd.readouterr()
        bad = [b"POST /x HTTP/1.0\r\nContent-Length: " + b"9" * 50 + b"z\r\n\r\n",
               b"POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\nnot-hex\r\n"]
        for request in bad:
            _send(server.port, request)
        for _ in range(3):
            _send(server.port, bad[0], read=False)
        reply = _send(server.port, b"GET /nothing/info/refs HTTP/1.0\r\n\r\n")
        assert reply.startswith(b"HTTP/1.0 "), reply[:80]  # still serving
    finally:
        server.close()
    out, err = capfd.readouterr()
    assert "Traceback" not in err and "Exception occurred" not in err, err[-2000:]


def test_one_envs_git_requests_at_once_are_capped_and_the_others_are_refused(tmp_path) -> None:
    # Each backend holds processes of the worker until its request ends: a command firing
    # off pushes by the dozen held most of a container's 128 for up to a minute.
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from openenv_gym.envs.git.server import MAX_BACKENDS

    release, entered = threading.Event(), threading.Semaphore(0)

    def gate(top: str):
        def run(start):
            if top == "busy":  # its backends wait here, holding their slots
                entered.release()
                release.wait(30)
            return held_start(start)
        return run

    server = GitHttpServer(str(tmp_path), gate=gate)
    request = b"GET /%s/info/refs HTTP/1.0\r\n\r\n"
    try:
        with ThreadPoolExecutor(MAX_BACKENDS) as pool:
            held = [pool.submit(_send, server.port, request % b"busy") for _ in range(MAX_BACKENDS)]
            for _ in range(MAX_BACKENDS):
                assert entered.acquire(timeout=30)
            assert _send(server.port, request % b"busy").startswith(b"HTTP/1.0 503")
            # Another env's repositories are served meanwhile.
            assert not _send(server.port, request % b"other").startswith(b"HTTP/1.0 503")
            release.set()
            assert all(not f.result(30).startswith(b"HTTP/1.0 503") for f in held)
        # Their slots are free again.
        assert not _send(server.port, request % b"busy").startswith(b"HTTP/1.0 503")
    finally:
        release.set()
        server.close()


def test_request_bodies_held_at_once_are_capped_for_the_whole_worker(tmp_path, monkeypatch) -> None:
    # A body is read into the worker's memory before its backend starts: one command pushing
    # 8 bodies of 256 MiB at once got the worker (the container, every session in it)
    # OOM-killed. Past the worker's budget a request is refused before its body is read.
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from openenv_gym.envs.git import server as git_server

    monkeypatch.setattr(git_server, "MAX_BODIES", 1 << 20, raising=False)  # the budget, made small
    release, entered = threading.Event(), threading.Semaphore(0)

    def gate(top: str):
        def run(start):
            entered.release()  # its body is read by now, and held until the backend ends
            release.wait(30)
            return held_start(start)
        return run

    server = GitHttpServer(str(tmp_path), gate=gate)

    def post(top: str, size: int, chunked: bool = False, send_body: bool = True) -> bytes:
        """A push of ``size`` bytes; without ``send_body`` only what precedes the body (a
        refused request must be refused before its body is read: no unread bytes left)."""
        head = f"POST /{top}/r.git/git-receive-pack HTTP/1.0\r\n"
        if chunked:
            head += f"Transfer-Encoding: chunked\r\n\r\n{size:x}\r\n"
            body = b"x" * size + b"\r\n0\r\n\r\n"
        else:
            head += f"Content-Length: {size}\r\n\r\n"
            body = b"x" * size
        return _send(server.port, head.encode() + (body if send_body else b""))

    try:
        with ThreadPoolExecutor(1) as pool:
            held = pool.submit(post, "one", 768 << 10)
            assert entered.acquire(timeout=30)
            # The same env's and another env's: the budget is the worker's, not an env's.
            assert post("one", 512 << 10, send_body=False).startswith(b"HTTP/1.0 503")
            assert post("two", 512 << 10, send_body=False).startswith(b"HTTP/1.0 503")
            assert post("two", 512 << 10, chunked=True, send_body=False).startswith(b"HTTP/1.0 503")
            release.set()
            assert not held.result(30).startswith(b"HTTP/1.0 503")
        # Given back when the request ended.
        assert not post("two", 768 << 10, chunked=True).startswith(b"HTTP/1.0 503")
        assert server._httpd.RequestHandlerClass.bodies.held == 0
    finally:
        release.set()
        server.close()


def test_a_reply_larger_than_the_budget_is_refused_not_held(tmp_path, monkeypatch) -> None:
    # A backend's reply sits in the worker's memory too, and the agent makes it as large as it
    # likes (its served repository's pack.compression 0 sent 70 blobs of 15 MiB raw from 5 MiB
    # of disk): read whole, it got the worker OOM-killed. Past the budget the fetch fails.
    import os
    import subprocess

    from openenv_gym.envs.git import server as git_server

    monkeypatch.setattr(git_server, "MAX_BODIES", 1 << 20, raising=False)  # the budget, made small
    repo = tmp_path / "r.git"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", "--bare", str(repo)], check=True)
    blob = subprocess.run([*git, "--git-dir", str(repo), "hash-object", "-w", "--stdin"],
                          input=os.urandom(2 << 20), capture_output=True, check=True).stdout.decode().strip()
    tree = subprocess.run([*git, "--git-dir", str(repo), "mktree"], input=f"100644 blob {blob}\tf\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    commit = subprocess.run([*git, "--git-dir", str(repo), "commit-tree", tree, "-m", "big"],
                            capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([*git, "--git-dir", str(repo), "update-ref", "refs/heads/main", commit], check=True)
    server = GitHttpServer(str(tmp_path))
    try:
        clone = subprocess.run([*git, "clone", "-q", f"{server.url}/r.git", str(tmp_path / "c")],
                               capture_output=True, text=True, timeout=60,
                               env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
        assert clone.returncode != 0, "a 2 MiB reply passed a 1 MiB budget"
        assert "503" in clone.stderr or "502" in clone.stderr, clone.stderr
        assert server._httpd.RequestHandlerClass.bodies.held == 0  # given back
        reply = _send(server.port, b"GET /r.git/info/refs?service=git-upload-pack HTTP/1.0\r\n\r\n")
        assert reply.startswith(b"HTTP/1.0 200"), reply[:200]  # small replies still served
    finally:
        server.close()


def test_connections_past_the_cap_are_closed_without_a_thread(tmp_path) -> None:
    # Each connection took a thread of the worker from its accept on, and threads count
    # against a container's pids_limit: a command holding 250 idle connections left the
    # worker no thread and its own shell no fork until the command timed out.
    from openenv_gym.envs.git.server import MAX_CONNECTIONS

    server = GitHttpServer(str(tmp_path))
    idle = []
    try:
        for _ in range(MAX_CONNECTIONS):
            idle.append(socket.create_connection(("127.0.0.1", server.port), timeout=10))
        extra = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(4)]
        for s in extra:  # closed by the server at once (the old server kept each open, a thread each)
            try:
                assert s.recv(1) == b""
            except ConnectionResetError:
                pass
            s.close()
        for s in idle:
            s.close()
        for _ in range(100):  # their threads end on the close; then requests are served again
            reply = _send(server.port, b"GET /nothing/info/refs HTTP/1.0\r\n\r\n")
            if reply:
                break
        assert reply.startswith(b"HTTP/1.0 "), reply[:80]
    finally:
        for s in idle:
            s.close()
        server.close()
