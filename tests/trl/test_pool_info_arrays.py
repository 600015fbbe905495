"""EnvPool's infos are the caller's, as RemoteEnv's and the vector env's are (protocol 2):
an array in an info is a writable copy, not a read-only view of the reply frame."""

from __future__ import annotations

import pytest

from openenv_gym.trl import EnvPool, EpisodeJob

pytestmark = pytest.mark.timeout(300)


def test_info_arrays_are_writable() -> None:
    # Taxi's info carries its action mask, an int8 array.
    with EnvPool("gym", num_workers=1, provider="process", env_id="Taxi-v4") as pool:
        [out] = pool.run([EpisodeJob([0, 1])])
    assert out.ok, out.message
    assert len(out.infos) == 3
    for info in out.infos:
        info["action_mask"][0] = 1  # raised "assignment destination is read-only"
