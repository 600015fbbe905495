"""A confined Coding-v0 child must leave nothing in the IPC namespace and watch no folder it may
not list: POSIX message queues (created by name, they outlived the worker on the process provider,
and the child removed the trainer's own queues) and inotify watches (the names of files created
in your home, /tmp or the other sandboxes, as they were made) are refused like System V IPC."""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import tempfile
import textwrap
import threading
import time
import uuid

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs._confine import abi as landlock_abi
from tests.security.helpers import key_values

pytestmark = pytest.mark.skipif(os.uname().machine != "x86_64" or landlock_abi() < 1,
                                reason="x86-64 syscall numbers; needs Landlock")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_MQ_OPEN, _MQ_UNLINK = 240, 241
_O_RDWR, _O_CREAT, _O_EXCL = 2, 0o100, 0o200


def _mq_exists(name: bytes) -> bool:
    fd = _libc.syscall(_MQ_OPEN, name, 0, 0, None)
    if fd >= 0:
        os.close(fd)
        return True
    return False


def _mq_unlink(name: bytes) -> None:
    _libc.syscall(_MQ_UNLINK, name)


def test_a_step_can_neither_leave_nor_remove_a_posix_message_queue() -> None:
    tag = uuid.uuid4().hex[:8]
    mine, left = f"openenv-gym-trainer-{tag}".encode(), f"openenv-gym-attack-{tag}".encode()
    attr = ctypes.create_string_buffer(struct.pack("qqqq", 0, 1, 1, 0))
    fd = _libc.syscall(_MQ_OPEN, mine, _O_CREAT | _O_RDWR, 0o600, attr)  # the trainer's own queue
    assert fd >= 0, os.strerror(ctypes.get_errno())
    os.close(fd)
    env = gym.make("OpenEnv/Coding-v0", provider="process", step_timeout=10.0)
    try:
        env.reset()
        obs, *_ = env.step({"code": textwrap.dedent(f"""
            import ctypes, errno, struct
            libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long
            attr = ctypes.create_string_buffer(struct.pack("qqqq", 0, 1, 1, 0))
            r = libc.syscall(240, {left!r}, {_O_CREAT | _O_EXCL | _O_RDWR}, 0o600, attr)
            print("create=" + errno.errorcode.get(ctypes.get_errno(), "?") if r < 0 else "create=ok")
            r = libc.syscall(241, {mine!r})
            print("unlink=" + errno.errorcode.get(ctypes.get_errno(), "?") if r < 0 else "unlink=ok")
        """)})
    finally:
        env.close()
    try:
        got = key_values(obs["stdout"])
        assert got == {"create": "EPERM", "unlink": "EPERM"}, obs
        assert not _mq_exists(left), "the step left a message queue behind the worker"
        assert _mq_exists(mine), "the step removed the trainer's message queue"
    finally:
        _mq_unlink(left)
        _mq_unlink(mine)


def test_a_step_cannot_watch_a_folder_it_may_not_list() -> None:
    home = tempfile.mkdtemp(prefix="openenv-gym-watched-", dir=os.path.expanduser("~"))
    env = gym.make("OpenEnv/Coding-v0", provider="process", step_timeout=10.0)
    try:
        env.reset()

        def make_a_file() -> None:
            time.sleep(1.5)
            with open(os.path.join(home, "api-key-name.txt"), "w") as f:
                f.write("x")

        writer = threading.Thread(target=make_a_file)
        writer.start()
        obs, *_ = env.step({"code": textwrap.dedent(f"""
            import ctypes, errno, os, select, struct, time
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(0)
            if fd < 0:
                print("watch=" + errno.errorcode.get(ctypes.get_errno(), "?"))
            else:
                wd = libc.inotify_add_watch(fd, {home!r}.encode(), 0xfff)
                print("watch=ok" if wd >= 0 else "watch=" + errno.errorcode.get(ctypes.get_errno(), "?"))
                names = set()
                end = time.time() + 3
                while wd >= 0 and time.time() < end:
                    if select.select([fd], [], [], 0.2)[0]:
                        buf = os.read(fd, 4096)
                        i = 0
                        while i < len(buf):
                            n = struct.unpack_from("iIII", buf, i)[3]
                            names.add(buf[i + 16:i + 16 + n].rstrip(b"\\0").decode())
                            i += 16 + n
                print("seen=" + ",".join(sorted(names)))
        """)})
        writer.join()
    finally:
        env.close()
        for name in os.listdir(home):
            os.unlink(os.path.join(home, name))
        os.rmdir(home)
    assert "api-key-name.txt" not in obs["stdout"], obs
    assert "watch=EPERM" in obs["stdout"], obs
