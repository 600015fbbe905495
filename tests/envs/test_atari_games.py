"""Atari-v0's game names: every listed ROM plays, and the bundled ROMs ALE cannot play are
refused by name instead of killing the worker (or, locally, the whole process)."""

from __future__ import annotations

import gymnasium as gym
import pytest

ale_py = pytest.importorskip("ale_py")
pytest.importorskip("cv2")

import openenv_gym  # noqa: E402,F401
from openenv_gym.envs.atari.games import available_games, rom_id  # noqa: E402
from openenv_gym.errors import InvalidRequestError  # noqa: E402

# ale-py 0.12 bundles these multi-player ROMs; loading one exits the process.
UNPLAYABLE = [g for g in ("combat", "joust", "maze_craze", "warlords")
              if g in ale_py.roms.get_all_rom_ids()]


def test_available_games_are_the_roms_ale_plays() -> None:
    games = available_games()
    assert "pong" in games and "tic_tac_toe_3d" in games
    assert not set(UNPLAYABLE) & set(games)
    assert all(ale_py.ALEInterface.isSupportedROM(ale_py.roms.get_rom_path(g)) for g in games)


@pytest.mark.parametrize("game", UNPLAYABLE or ["joust"])
def test_a_rom_ale_cannot_play_is_refused_by_name(game: str) -> None:
    if not UNPLAYABLE:
        pytest.skip("this ale-py bundles no unplayable ROM")
    with pytest.raises(InvalidRequestError, match="does not play it"):
        rom_id(game)


def test_remote_unplayable_rom_raises_a_named_error_not_a_dead_worker() -> None:
    if not UNPLAYABLE:
        pytest.skip("this ale-py bundles no unplayable ROM")
    # It used to kill the worker as it loaded the ROM: "worker exited during startup".
    with pytest.raises(InvalidRequestError, match="does not play it"):
        gym.make("OpenEnv/Atari-v0", game="Joust", provider="process")


def test_gymnasium_ram_ids_point_at_obs_type_ram() -> None:
    for name in ("ALE/Pong-ram-v5", "Pong-ram"):
        with pytest.raises(InvalidRequestError, match=r"game='pong'\) with obs_type='ram'"):
            rom_id(name)
