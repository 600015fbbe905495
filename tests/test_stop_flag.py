"""StopFlag in a process that holds many descriptors: its pipe's then lies past select()'s
FD_SETSIZE (1024), as in `openenv-gym start` of a large pool (a pidfd per process worker,
sockets per docker worker), whose watch loop then died with ValueError."""

from __future__ import annotations

import os
import resource
import threading

import pytest

from openenv_gym._stop_flag import StopFlag


@pytest.fixture()
def many_fds():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        if hard != resource.RLIM_INFINITY and hard < 1200:
            pytest.skip("RLIMIT_NOFILE too low to hold 1100 descriptors")
        resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_wait_past_fd_setsize(many_fds) -> None:
    flag = StopFlag()
    assert flag._read >= 1024
    assert flag.wait(0.01) is False
    threading.Timer(0.05, flag.set).start()
    assert flag.wait(10.0) is True
    assert flag.wait(0) is True  # stays set


def test_two_threads_wait_on_one_flag() -> None:
    flag = StopFlag()
    results: list[bool] = []
    threads = [threading.Thread(target=lambda: results.append(flag.wait(10.0))) for _ in range(2)]
    for t in threads:
        t.start()
    flag.set()
    for t in threads:
        t.join(10)
    assert results == [True, True]
