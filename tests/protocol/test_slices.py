"""The slice contract: column layout, and the sealed shared buffer a worker cannot resize."""

from __future__ import annotations

import os

import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.protocol.slices import SliceLayout, create_shared, is_flat, map_shared


def test_layout_gives_every_column_its_own_aligned_place() -> None:
    layout = SliceLayout(spaces.Box(0, 255, (3, 2), np.uint8), spaces.MultiDiscrete([3, 4]), 5)
    cols = layout.views(bytearray(layout.size))
    assert cols["obs"].shape == (5, 3, 2) and cols["obs"].dtype == np.uint8
    assert cols["action"].shape == (5, 2) and cols["action"].dtype == np.int64
    assert cols["reward"].dtype == np.float64 and cols["terminated"].dtype == np.bool_
    for name, col in cols.items():  # writing one column leaves the others alone
        col[...] = 1
        others = [c for n, c in cols.items() if n != name]
        assert all(not np.any(c) for c in others), name
        col[...] = 0
    assert all(offset % 64 == 0 for offset, _, _ in layout.columns.values())


def test_non_array_spaces_have_no_column() -> None:
    layout = SliceLayout(spaces.Text(10), spaces.Dict({"a": spaces.Discrete(2)}), 2)
    assert not layout.flat_obs and not layout.flat_action
    assert set(layout.views(bytearray(layout.size))) == {"cmd", "reward", "terminated", "truncated"}
    assert is_flat(spaces.MultiBinary(3)) and not is_flat(spaces.Tuple([spaces.Discrete(2)]))


def test_declared_infos_get_typed_columns_and_bad_declarations_are_named() -> None:
    layout = SliceLayout(spaces.Discrete(3), spaces.Discrete(2), 4,
                         {"lives": "int", "gain": "float", "won": "bool"})
    cols = layout.views(bytearray(layout.size))
    assert layout.info_keys == ("lives", "gain", "won")
    assert [cols[f"info.{k}"].dtype for k in layout.info_keys] == [np.int64, np.float64, np.bool_]
    assert cols["info_ok"].shape == (4,)
    assert "info_ok" not in SliceLayout(spaces.Discrete(3), spaces.Discrete(2), 4).columns
    with pytest.raises(ValueError, match="'lives' has type 'str'"):
        SliceLayout(spaces.Discrete(3), spaces.Discrete(2), 4, {"lives": "str"})
    with pytest.raises(ValueError, match="info_types must map info keys"):
        SliceLayout(spaces.Discrete(3), spaces.Discrete(2), 4, ["lives"])
    for key in ("_lives", "final_info"):  # would collide with Gymnasium's masks and finals
        with pytest.raises(ValueError, match=f"info key '{key}' cannot have a column"):
            SliceLayout(spaces.Discrete(3), spaces.Discrete(2), 4, {key: "int"})


def test_shared_buffer_is_sealed_against_resizing() -> None:
    fd, mapping = create_shared(4096)
    try:
        # What a hostile worker would try: shrinking would SIGBUS the trainer's mapping.
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 0)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 1 << 20)
        other = map_shared(os.dup(fd), 4096)  # the worker's view: same memory
        other[:5] = b"hello"
        assert mapping[:5] == b"hello"
        other.close()
    finally:
        os.close(fd)
        mapping.close()


def test_worker_refuses_a_buffer_smaller_than_the_layout() -> None:
    fd, mapping = create_shared(64)
    try:
        with pytest.raises(ValueError, match="needs 4096"):
            map_shared(os.dup(fd), 4096)
    finally:
        os.close(fd)
        mapping.close()
