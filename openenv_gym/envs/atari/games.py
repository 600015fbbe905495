"""Resolve a game name to an ale-py ROM id (every ROM bundled in the ale-py wheel works).

Example:
    >>> rom_id("Pong"), rom_id("ALE/SpaceInvaders-v5"), rom_id("air_raid")
    ('pong', 'space_invaders', 'air_raid')
"""

from __future__ import annotations

import difflib
import functools
import re

from openenv_gym.errors import InvalidRequestError, UnknownEnvironmentError

__all__ = ["available_games", "rom_id"]


def available_games() -> list[str]:
    """ROM ids bundled with the installed ale-py that ALE plays (``"pong"``, ``"breakout"``, ...)."""
    return list(_bundled_roms()[0])


@functools.lru_cache(maxsize=None)
def _bundled_roms() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The bundled ROM ids ALE plays, and those it does not: ale-py ships multi-player ROMs
    (combat, joust, maze_craze, warlords in 0.12) whose load exits the whole process."""
    from ale_py import ALEInterface, roms

    ids = sorted(roms.get_all_rom_ids())
    supported = getattr(ALEInterface, "isSupportedROM", None)
    if supported is None:
        return tuple(ids), ()
    playable = tuple(g for g in ids if supported(roms.get_rom_path(g)))
    return playable, tuple(g for g in ids if g not in playable)


def rom_id(game: str) -> str:
    """The ROM id of ``game``, given as ``"pong"``, ``"Pong"``, ``"ALE/Pong-v5"`` or ``"air_raid"``.

    Raises:
        UnknownEnvironmentError: No bundled ROM has that name; close matches are named.
        InvalidRequestError: An id of other settings than v5's (``"PongNoFrameskip-v4"``).
    """
    text = str(game).strip()
    # Gymnasium's RAM ids (ALE/Pong-ram-v5) are the game with obs_type="ram".
    ram = re.fullmatch(r"(?:ALE/)?(.+?)-ram(?:NoFrameskip|Deterministic)?(?:-v\d+)?", text)
    if ram:
        raise InvalidRequestError(f"game={game!r} is Gymnasium's id for RAM observations; Atari-v0 "
                                  f"takes the game alone (game={rom_id(ram[1])!r}) with obs_type='ram'")
    # Gymnasium's older ids (Pong-v4, PongNoFrameskip-v4, ALE/Pong-v0) mean other settings:
    # say so rather than serve v5's under their name.
    legacy = re.fullmatch(r"(?:ALE/)?(.+?)(NoFrameskip|Deterministic)?-v(\d+)", text)
    if legacy and (legacy[2] or legacy[3] != "5"):
        raise InvalidRequestError(
            f"game={game!r} is Gymnasium's id for other settings than ALE v5's; Atari-v0 takes "
            f"the game alone (game={rom_id(legacy[1])!r}) with v5's settings, which "
            "you change with its arguments (v4: repeat_action_probability=0.0; NoFrameskip: "
            "frameskip=1; Deterministic: a fixed frameskip)")
    name = re.sub(r"^ale/|-v5$", "", text.lower())
    games = available_games()
    # Gymnasium ids are CamelCase (TicTacToe3D), ROM ids snake_case (tic_tac_toe_3d):
    # compare with separators removed.
    by_key = {g.replace("_", ""): g for g in games}
    key = re.sub(r"[_\-\s]", "", name)
    if key in by_key:
        return by_key[key]
    unplayable = {g.replace("_", ""): g for g in _bundled_roms()[1]}
    if key in unplayable:
        raise InvalidRequestError(f"game={game!r}: ale-py bundles the ROM {unplayable[key]!r} but "
                                  "ALE does not play it (a multi-player game, "
                                  f"unsupported: {', '.join(_bundled_roms()[1])})")
    close = difflib.get_close_matches(name, games, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownEnvironmentError(f"game={game!r} is not a ROM bundled with ale-py{hint} "
                                  f"({len(games)} games: {', '.join(games[:8])}, ...; all of them: "
                                  "openenv_gym.envs.atari.games.available_games())")
