"""The requests a client sends an env server over the binary path: one builder per operation.

Every client of a served env builds its requests here (:class:`~openenv_gym.RemoteEnv`, the
vector env's per-env calls, the SB3 adapter, TRL's :class:`~openenv_gym.trl.Episode`), and
:meth:`EnvService.handle <openenv_gym.server.service.EnvService.handle>` serves them, so the
vocabulary of the protocol is written down once on each side. A request is a plain dict:
msgpack carries it as it is. Values must already be in wire form (``to_wire``).

The vector env's step goes through a slice (:func:`slice_open`, :func:`slice_step`): its
commands, actions and results sit in a shared buffer laid out by
:mod:`openenv_gym.protocol.slices`, and the request only says "run them".

Example:
    >>> step("s1", {"message": "hi"})
    {'op': 'step', 'sid': 's1', 'action': {'message': 'hi'}}
    >>> reset(seed=3)
    {'op': 'reset', 'seed': 3, 'options': None}
    >>> reset("s1", seed=3)["sid"]           # the same session: no new env on the worker
    's1'
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

__all__ = ["batch", "call", "close", "get_attr", "render", "reset", "set_attr",
           "slice_open", "slice_step", "spec", "state", "step", "web"]

Request = dict[str, Any]


def spec() -> Request:
    """Ask for the served env's spec (spaces, metadata, catalog name)."""
    return {"op": "spec"}


def reset(sid: str | None = None, seed: int | None = None,
          options: Mapping[str, Any] | None = None, bound: bool = False) -> Request:
    """Start an episode: in session ``sid``, or in a new session when ``sid`` is None.

    ``bound``: a new session ends when the connection that asked for it closes (a forked
    child's copy of an env: the child may exit without ``close()``)."""
    request: Request = {"op": "reset", "seed": seed, "options": options}
    if sid is not None:
        request["sid"] = sid
    elif bound:
        request["bound"] = True
    return request


def step(sid: str, action: Any) -> Request:
    """Take one step in session ``sid``."""
    return {"op": "step", "sid": sid, "action": action}


def state(sid: str) -> Request:
    """Read session ``sid``'s state (episode id, step count, env fields)."""
    return {"op": "state", "sid": sid}


def render(sid: str) -> Request:
    """Render session ``sid``'s env."""
    return {"op": "render", "sid": sid}


def close(sid: str) -> Request:
    """End session ``sid`` (its env is closed on the worker)."""
    return {"op": "close", "sid": sid}


def call(sid: str, name: str, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None) -> Request:
    """Call method ``name`` of session ``sid``'s env (or read it, if not callable)."""
    return {"op": "call", "sid": sid, "name": name, "args": list(args), "kwargs": dict(kwargs or {})}


def get_attr(sid: str, name: str) -> Request:
    """Read attribute ``name`` of session ``sid``'s env."""
    return {"op": "get_attr", "sid": sid, "name": name}


def set_attr(sid: str, name: str, value: Any) -> Request:
    """Set attribute ``name`` of session ``sid``'s env."""
    return {"op": "set_attr", "sid": sid, "name": name, "value": value}


def web(known: str | None = None) -> Request:
    """Ask for what the live web view shows; ``known`` is the version already shown."""
    return {"op": "web", "known": known}


def batch(calls: Sequence[Request]) -> Request:
    """Run ``calls`` (requests of this module) one after the other; one reply holds theirs."""
    return {"op": "batch", "calls": list(calls)}


def slice_open(n: int, size: int | None = None, bound: bool = False,
               bell: bool = False) -> Request:
    """Start ``n`` sessions as one slice. With ``size``, the request carries a shared-memory
    descriptor of that many bytes (the buffer's layout: :mod:`openenv_gym.protocol.slices`);
    without, the columns travel in the messages (a worker over TCP). ``bound``: as
    :func:`reset`'s, for the slice and its sessions. ``bell``: a second descriptor follows
    the buffer's, the pool's bell (:mod:`openenv_gym.protocol.bell`), which the worker's
    connection sleeps on between requests from then on."""
    request: Request = {"op": "slice_open", "n": n}
    if size is not None:
        request["size"] = size
    if bound:
        request["bound"] = True
    if bell:
        request["bell"] = True
    return request


def slice_step(slice_id: str, **extra: Any) -> Request:
    """Run the commands in slice ``slice_id``'s ``cmd`` column; ``extra`` holds what has no
    column (``seeds``, ``options``, inline ``actions``; over TCP the columns themselves)."""
    return {"op": "slice_step", "slice": slice_id, **extra}
