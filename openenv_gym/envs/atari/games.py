"""Resolve a game name to an ale-py ROM id (every ROM bundled in the ale-py wheel works).

Example:
    >>> rom_id("Pong"), rom_id("ALE/SpaceInvaders-v5"), rom_id("air_raid")
    ('pong', 'space_invaders', 'air_raid')
"""

from __future__ import annotations

import difflib
import re

from openenv_gym.errors import InvalidRequestError, UnknownEnvironmentError

__all__ = ["available_games", "rom_id"]


def available_games() -> list[str]:
    """ROM ids bundled with the installed ale-py (``"pong"``, ``"breakout"``, ...)."""
    from ale_py import roms

    return sorted(roms.get_all_rom_ids())


def rom_id(game: str) -> str:
    """The ROM id of ``game``, given as ``"pong"``, ``"Pong"``, ``"ALE/Pong-v5"`` or ``"air_raid"``.

    Raises:
        UnknownEnvironmentError: No bundled ROM has that name; close matches are named.
        InvalidRequestError: An id of other settings than v5's (``"PongNoFrameskip-v4"``).
    """
    text = str(game).strip()
    # Gymnasium's older ids (Pong-v4, PongNoFrameskip-v4, ALE/Pong-v0) mean other settings:
    # say so rather than serve v5's under their name.
    legacy = re.fullmatch(r"(?:ALE/)?(.+?)(NoFrameskip|Deterministic)?-v(\d+)", text)
    if legacy and (legacy[2] or legacy[3] != "5"):
        raise InvalidRequestError(
            f"game={game!r} is Gymnasium's id for other settings than ALE v5's; Atari-v0 takes "
            f"the game alone (game={rom_id(legacy[1])!r}) with v5's settings, which "
            "you change with its arguments (v4: repeat_action_probability=0.0; NoFrameskip: "
            "frameskip=1; Deterministic: a fixed frameskip)")
    name = re.sub(r"^ALE/|-v5$", "", text).lower()
    games = available_games()
    # Gymnasium ids are CamelCase (TicTacToe3D), ROM ids snake_case (tic_tac_toe_3d):
    # compare with separators removed.
    by_key = {g.replace("_", ""): g for g in games}
    key = re.sub(r"[_\-\s]", "", name)
    if key in by_key:
        return by_key[key]
    close = difflib.get_close_matches(name, games, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownEnvironmentError(f"game={game!r} is not a ROM bundled with ale-py{hint} "
                                  f"({len(games)} games: {', '.join(games[:8])}, ...)")
