"""default_observation_fn(max_chars=...) at its edges: 0 keeps no output (text[-0:] is the
whole text, so the output came back whole after a note saying it was cut), and a negative or
non-int limit is refused instead of cutting nonsense."""

from __future__ import annotations

import pytest

from openenv_gym.trl.formats import default_observation_fn

OBS = {"output": "x" * 50 + "TAIL", "exit_code": 0}


def test_zero_keeps_none_of_the_output() -> None:
    text = default_observation_fn("git", max_chars=0)(OBS)
    assert "xx" not in text and "TAIL" not in text
    assert "[... 54 characters cut ...]" in text and text.endswith("[exit_code: 0]\n")


@pytest.mark.parametrize("limit", [1, 2, 10, 53])
def test_small_limits_keep_exactly_that_many(limit: int) -> None:
    text = default_observation_fn("git", max_chars=limit)(OBS)
    head, _, rest = text.partition("\n[... ")
    tail = rest.split(" characters cut ...]\n", 1)[1].rsplit("\n[exit_code", 1)[0]
    assert len(head) + len(tail) == limit


@pytest.mark.parametrize("bad", [-1, 2.5, "100", True])
def test_bad_limits_are_refused(bad) -> None:
    with pytest.raises(ValueError, match="max_chars"):
        default_observation_fn("git", max_chars=bad)


def test_a_numpy_limit_counts() -> None:
    import numpy as np

    # It was refused as "max_chars must be an int >= 0 or None, not 10".
    text = default_observation_fn("git", max_chars=np.int64(10))(OBS)
    assert "[... 44 characters cut ...]" in text
