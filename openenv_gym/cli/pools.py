"""Records of the worker pools ``openenv-gym start`` keeps running, so other commands find them.

A pool is owned by its ``start`` process (workers of the process provider watch that pid;
containers carry its pid in their labels). While it runs, the pool is described by a JSON
record in ``<runtime_dir>/pools/<name>.json``: env, provider, owner pid, each worker's address,
pid or container and log file, and the web view's address. ``ps`` lists records whose owner is
alive, ``stop`` signals the owner (which stops its workers and removes its record), ``logs``
reads the workers' logs. Records of owners that died (SIGKILL) are dropped when listed.

One rule (:func:`_read`) says what a readable record is, for every command. A file in a
record's place that is not one (corrupt JSON, a field of the wrong type, a folder or FIFO, no
permission) is skipped by ``ps``, named by ``stop``/``logs``, and not overwritten by
``start`` unless it names an owner that is gone (:class:`UnreadableRecordError`).

Example:
    >>> record = PoolRecord(name="demo", env="echo", provider="process", owner_pid=os.getpid())
    >>> record.alive()
    True
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import signal
import stat
import time
from dataclasses import asdict, dataclass, field
from typing import Any, BinaryIO, Iterator

from openenv_gym.errors import OpenEnvError
from openenv_gym.providers._docker_owner import owner_alive, process_start
from openenv_gym.providers._runtime import runtime_dir, write_json

__all__ = ["PoolRecord", "UnreadableRecordError", "pools_dir", "claim", "save", "remove", "load_all",
           "scan", "find", "unreadable", "stop", "worker_logs", "LogFollower", "valid_name",
           "NAME_RULE", "process_start"]

_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")  # fullmatch: "$" matches before "\n"
#: :func:`valid_name`'s rule in words, for the messages that refuse a name.
NAME_RULE = ("lowercase letters, digits, '_', '.' and '-', starting with a letter or digit, "
             "up to 63 characters")
#: Largest record read (a pool of thousands of workers takes well under 1 MiB): a bigger file
#: in a record's place (a sparse 1 GiB one) was read whole into memory by every command.
_MAX_RECORD_BYTES = 16 << 20


def valid_name(name: str) -> bool:
    """Whether ``name`` can name a pool (:data:`NAME_RULE`): it names the pool's record file,
    runtime folder and worker sockets, so ``stop``/``logs`` can find only such names.

    Example:
        >>> valid_name("echo-1"), valid_name(""), valid_name("My Pool")
        (True, False, False)
    """
    return bool(_NAME.fullmatch(name))


def pools_dir() -> str:
    """The folder of pool records (inside the process provider's private runtime folder)."""
    path = os.path.join(runtime_dir(), "pools")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


@dataclass
class PoolRecord:
    """One running pool.

    Args:
        name: Pool name (unique per user and machine).
        env: Catalog name of its env.
        provider: ``process``, ``docker`` or ``ray``.
        owner_pid: Pid of the ``openenv-gym start`` process that owns it.
        workers: Per worker: ``index``, ``address``, and where known ``pid``, ``container``,
            ``log`` (file path).
        web: URL of the pool's web view, if served.
        started: Unix time it started.
        owner_start: The owner's start time (clock ticks since boot; filled in when empty).
    """

    name: str
    env: str
    provider: str
    owner_pid: int
    workers: list[dict[str, Any]] = field(default_factory=list)
    web: str | None = None
    started: float = field(default_factory=time.time)
    owner_start: str = ""

    def __post_init__(self) -> None:
        if not self.owner_start:
            self.owner_start = process_start(self.owner_pid)

    def alive(self) -> bool:
        """Whether its owner still runs (the same process, not a later one with its pid)."""
        return owner_alive(self.owner_pid, self.owner_start)

    @property
    def path(self) -> str:
        """Where the record is stored."""
        return os.path.join(pools_dir(), f"{self.name}.json")

    def worker_lines(self) -> list[str]:
        """One line per worker (index, address, pid or container, log file), printed with
        ``soft_wrap`` so an address is never cut, whatever the terminal's width."""
        lines = []
        for w in self.workers:
            ident = f"pid {w['pid']}" if w.get("pid") else f"container {(w.get('container') or '?')[:12]}"
            lines.append(f"w{w['index']} {w['address']} {ident}" + (f" log {w['log']}" if w.get("log") else ""))
        return lines


class UnreadableRecordError(OpenEnvError):
    """A file is in a pool record's place but cannot be read as one: corrupt JSON, a field of
    the wrong type, a folder or a FIFO, no permission to read it.

    Its owner may still run (a record edited by hand, written by another version), so its
    name is not taken over unless the file names an owner that is gone (:meth:`owner_gone`).

    Attributes:
        path: The file.
        reason: What is wrong with it.
        owner: ``(pid, start time)`` of the owner it still names clearly, else None.
    """

    def __init__(self, path: str, reason: str, owner: tuple[int, str] | None = None) -> None:
        super().__init__(f"the pool record {path} cannot be read ({reason})")
        self.path, self.reason, self.owner = path, reason, owner

    def owner_gone(self) -> bool:
        """Whether it names an owner, and that owner no longer runs."""
        return self.owner is not None and not owner_alive(*self.owner)

    @property
    def name(self) -> str:
        """The pool name the file's place is for (a record sits under its own name)."""
        return os.path.basename(self.path).removesuffix(".json")

    def fix(self) -> str:
        """How the user gets the name back (``stop`` cannot signal an owner it cannot read)."""
        name = self.name
        rm = "rm -r" if os.path.isdir(self.path) else "rm"
        if self.owner is not None:
            return (f"it names owner pid {self.owner[0]}, which still runs: if that is the "
                    f"`openenv-gym start` of pool {name}, stop it (kill {self.owner[0]}); once no "
                    f"pool named {name} runs, remove the file: {rm} {shlex.quote(self.path)}")
        return (f"if no pool named {name} runs (its `openenv-gym start` has exited), remove the "
                f"file: {rm} {shlex.quote(self.path)}")


def save(record: PoolRecord) -> None:
    """Write (or rewrite) a record atomically."""
    write_json(record.path, asdict(record), indent=1)


def claim(record: PoolRecord) -> bool:
    """Take the record's name for its owner before any worker starts: write the record
    unless a live pool has that name. Check and write happen under a lock, so of two
    ``start`` commands of one name at once, exactly one gets it.

    Returns:
        Whether the name is now this record's (False: a live pool has it).

    Raises:
        UnreadableRecordError: The file in the record's place cannot be read, and does not
            name an owner that is gone: a running pool may own it, so it is left alone.
    """
    with _names_locked():
        held = _state(record.path)  # a record sits under its own name only (_read)
        if isinstance(held, PoolRecord) and held.alive():
            return False
        if isinstance(held, UnreadableRecordError) and not held.owner_gone():
            raise held
        save(record)
        return True


def restore(record: PoolRecord) -> bool:
    """Write a running pool's record again if its file is gone or unreadable (a tmp cleaner
    on a long run, an edit by hand), so that ``ps``, ``logs`` and ``stop`` still find the
    pool and no other ``start`` takes its name; a readable record, ours or one another
    ``start`` wrote under the name since, is left alone. Its owner calls this now and then.

    Returns:
        Whether it was written again.
    """
    if isinstance(_state(record.path), PoolRecord):  # the usual case, without the lock
        return False
    with _names_locked():  # as claim(): a start of this name takes turns with it
        if isinstance(_state(record.path), PoolRecord):
            return False
        try:
            save(record)
        except OSError:  # a folder in its place: `ps` skips it, and the next turn tries again
            return False
        return True


@contextlib.contextmanager
def _names_locked() -> Iterator[None]:
    """Hold the lock under which pool names are taken, restored and given up (one process
    at a time: the check of a name and the write or removal of its record go together)."""
    with open(os.path.join(pools_dir(), ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


def _state(path: str) -> PoolRecord | UnreadableRecordError | None:
    """What is at ``path``: a record, why it is not one, or None (nothing)."""
    try:
        return _read(path)
    except UnreadableRecordError as exc:
        return exc
    except FileNotFoundError:
        return None


def _read(path: str) -> PoolRecord:
    """The record stored at ``path``: the one rule of what a readable record is, for
    ``start``, ``ps``, ``stop`` and ``logs`` alike.

    Raises:
        FileNotFoundError: No file is there.
        UnreadableRecordError: Something is there that is not a record of ours.
    """
    try:
        # O_NONBLOCK: a FIFO in its place would block open() until some writer came, and
        # `ps`, `stop` and `start` with it (for good).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnreadableRecordError(path, exc.strerror or str(exc)) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # before fdopen, which refuses a folder with its own error
        os.close(fd)
        raise UnreadableRecordError(path, "a folder, not a file" if stat.S_ISDIR(mode)
                                    else "not a regular file")
    with os.fdopen(fd, "rb") as f:
        try:
            text = f.read(_MAX_RECORD_BYTES + 1)  # bounded: the file may grow meanwhile
            if len(text) > _MAX_RECORD_BYTES:
                raise UnreadableRecordError(path, f"larger than {_MAX_RECORD_BYTES} bytes")
            data = json.loads(text)
        except (OSError, ValueError, RecursionError) as exc:
            raise UnreadableRecordError(path, f"not JSON: {exc}") from None
    try:
        record = _parse(data)
    except TypeError:
        raise UnreadableRecordError(path, "a field is missing or of another type",
                                    _owner_of(data)) from None
    if f"{record.name}.json" != os.path.basename(path):
        # A copy or a link of another pool's record: `ps` listed that pool twice.
        raise UnreadableRecordError(path, f"it is pool {record.name!r}'s record, under another name",
                                    _owner_of(data))
    return record


def _owner_of(data: Any) -> tuple[int, str] | None:
    """The owner (pid, start time) a record that is not readable as a whole still names."""
    if isinstance(data, dict):
        pid, start = data.get("owner_pid"), data.get("owner_start", "")
        if type(pid) is int and pid > 0 and isinstance(start, str):
            return pid, start
    return None


def remove(record: PoolRecord) -> None:
    """Delete a record (its owner does this when it stops); a record of the same name that
    another owner wrote is left alone."""
    # As claim(): a `start` that takes the name over between our read and our unlink would
    # lose its fresh record (`ps` and `stop` would no longer find its pool).
    with _names_locked():
        held = _state(record.path)
        if held is None:
            return
        if isinstance(held, PoolRecord):
            owner = held.owner_pid
        else:  # naming no owner: ours to clean up (while we hold the name, no `start` writes it)
            owner = held.owner[0] if held.owner else record.owner_pid
        if owner != record.owner_pid:
            return
        try:
            os.unlink(record.path)
        except OSError:
            pass  # gone already, or a folder put in its place: `start` names it to whoever wants the name


def load_all() -> list[PoolRecord]:
    """Every pool whose owner is alive, oldest first; records of dead owners are removed."""
    return scan()[0]


def scan() -> tuple[list[PoolRecord], list[UnreadableRecordError]]:
    """:func:`load_all`'s pools, and why each file in a record's place that is not a record
    of ours (edited by hand, another version's) was left out: ``ps`` names them."""
    records: list[PoolRecord] = []
    unread: list[UnreadableRecordError] = []
    folder = pools_dir()
    for entry in sorted(os.listdir(folder)):
        if not entry.endswith(".json"):
            continue
        record = _state(os.path.join(folder, entry))
        if isinstance(record, UnreadableRecordError):
            unread.append(record)
        if not isinstance(record, PoolRecord):
            continue  # gone meanwhile, or not a record of ours
        if record.alive():
            records.append(record)
        else:
            remove(record)
    return sorted(records, key=lambda r: r.started), unread


def _parse(data: Any) -> PoolRecord:
    """A record from its JSON, with every field of the type the commands use.

    Raises:
        TypeError: A field is missing or of another type (one such file made `ps`, `stop
            --all` and `logs` fail with a traceback for every pool).
    """
    record = PoolRecord(**data) if isinstance(data, dict) else None
    if (record is None or not all(isinstance(v, str) for v in (record.name, record.env, record.provider,
                                                                record.owner_start))
            # `stop` signals it: 0 is the caller's process group, -1 every process it may signal
            or type(record.owner_pid) is not int or record.owner_pid <= 0
            or not isinstance(record.started, (int, float)) or not isinstance(record.workers, list)
            or not (record.web is None or isinstance(record.web, str))
            or not all(_valid_worker(w) for w in record.workers)):
        raise TypeError("not a pool record")
    return record


def _valid_worker(w: Any) -> bool:
    return (isinstance(w, dict) and type(w.get("index")) is int and isinstance(w.get("address"), str)
            and (w.get("pid") is None or (type(w["pid"]) is int and w["pid"] > 0))
            and all(w.get(key) is None or isinstance(w[key], str) for key in ("container", "log")))


def find(name: str) -> PoolRecord | None:
    """The running pool called ``name``, or None."""
    return next((r for r in load_all() if r.name == name), None)


def unreadable(name: str) -> UnreadableRecordError | None:
    """Why the file in the place of pool ``name``'s record cannot be read (None: it can, or
    there is none); ``stop`` and ``logs`` say so instead of "no such pool"."""
    if not valid_name(name):  # a name given to `stop` is not a path to read
        return None
    held = _state(os.path.join(pools_dir(), f"{name}.json"))
    return held if isinstance(held, UnreadableRecordError) else None


def stop(record: PoolRecord, timeout: float = 30.0) -> bool:
    """Ask a pool's owner to stop it (SIGTERM) and wait until it has exited.

    Returns:
        True when the owner is gone within ``timeout`` (its workers with it).
    """
    try:
        os.kill(record.owner_pid, signal.SIGTERM)
    except ProcessLookupError:
        remove(record)
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not record.alive():
            remove(record)
            return True
        time.sleep(0.05)
    return False


#: Bytes read back from the end of a log per step of :func:`_last_lines`.
_TAIL_BLOCK = 64 << 10
#: Most bytes :func:`_last_lines` reads: lines that long are cut, not read into memory whole.
_MAX_TAIL_BYTES = 16 << 20


def _last_lines(f: BinaryIO, n: int, end: int | None = None) -> list[str]:
    """The last ``n`` lines of the open file ``f`` (of its first ``end`` bytes, if given),
    read back from its end block by block.

    A process worker's log grows for as long as its pool runs (hundreds of MiB from an env
    that prints every step): read whole, `logs --tail 2` took a second and 1 GiB of memory
    per 400 MiB of log.
    """
    if n <= 0:  # lines[-0:] would be every line
        return []
    pos = f.seek(0, os.SEEK_END) if end is None else end
    blocks: list[bytes] = []
    newlines = size = 0
    # One newline more than n: the first line found may be cut at the block's start.
    while pos > 0 and newlines <= n and size < _MAX_TAIL_BYTES:
        step = min(_TAIL_BLOCK, pos)
        pos -= step
        f.seek(pos)
        blocks.append(f.read(step))
        newlines += blocks[-1].count(b"\n")
        size += len(blocks[-1])
    lines = b"".join(reversed(blocks)).decode(errors="replace").splitlines()
    if pos > 0 and len(lines) > 1:  # the first line may have begun in a block not read
        lines = lines[1:]
    return lines[-n:]


def worker_logs(record: PoolRecord, index: int | None = None, tail: int = 50) -> dict[int, str]:
    """The last ``tail`` lines of each worker's log (process workers log to files).

    Args:
        record: The pool.
        index: Only this worker.
        tail: Lines per worker (0: none).

    Returns:
        Worker index -> text (empty when the worker keeps no log file).
    """
    out: dict[int, str] = {}
    for worker in record.workers:
        if index is not None and worker["index"] != index:
            continue
        text = ""
        if worker.get("log"):
            try:
                with open(worker["log"], "rb") as f:
                    text = "\n".join(_last_lines(f, tail))
            except FileNotFoundError:
                text = (f"(its log file {worker['log']} is gone, removed or rotated away; the "
                        "worker writes on into the deleted file)")
            except OSError:
                text = ""
        out[worker["index"]] = text
    return out


class LogFollower:
    """Reads what a worker appends to its log file from a point on (``logs --follow``).

    The file is opened again when another one takes its path (a worker restarted after its
    log was removed), and read from its start again when it shrank (truncated).

    Args:
        path: The log file.
        tail: Lines already in the file to give first (0: none).
    """

    def __init__(self, path: str, tail: int) -> None:
        self.path = path
        self._file: BinaryIO | None = None
        self._pending = b""  # the end of a line still being written
        self._first = self._open(tail)

    def _open(self, tail: int) -> list[str]:
        try:
            self._file = open(self.path, "rb")
        except OSError:  # not there (yet, again): the next read tries once more
            self._file = None
            return []
        end = self._file.seek(0, os.SEEK_END)  # the lines before it are the tail, those after new
        return _last_lines(self._file, tail, end) if tail > 0 else []

    def read(self, final: bool = False) -> list[str]:
        """The whole lines written since the last call (with ``final``: a last unfinished one
        too), after the tail lines on the first call."""
        lines, self._first = self._first, []
        try:
            replaced = os.stat(self.path).st_ino != os.fstat(self._file.fileno()).st_ino \
                if self._file else True
        except OSError:
            replaced = False  # removed: the worker writes on into the file we hold open
        if replaced:
            if self._file:
                lines += self._drain(final=True)
                self._file.close()
            self._open(0)
            if self._file:
                self._file.seek(0)
        if self._file:
            lines += self._drain(final)
        return lines

    def _drain(self, final: bool) -> list[str]:
        assert self._file is not None
        if os.fstat(self._file.fileno()).st_size < self._file.tell():
            self._file.seek(0)  # truncated: what is there now is new
            self._pending = b""
        data = self._pending + self._file.read()
        if final:
            self._pending = b""
        else:
            data, _, self._pending = data.rpartition(b"\n")
        return data.decode(errors="replace").splitlines() if data else []

    def close(self) -> None:
        """Close the file."""
        if self._file:
            self._file.close()
