"""The web view shows the newest frame of a stack of color frames, (K, H, W, 3): what Atari-v0
serves with preprocess=True, grayscale_obs=False and frame_stack > 1 (uint8, or float32 with
scale_obs=True)."""

from __future__ import annotations

import numpy as np
import pytest

from openenv_gym.server.web import as_image


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_color_frame_stack_shows_its_newest_frame(dtype) -> None:
    stack = np.zeros((4, 84, 84, 3), dtype)
    stack[-1, :, :, 0] = 1 if dtype is np.float32 else 255
    image = as_image(stack)
    assert image is not None and image.shape == (84, 84, 3)
    assert image[..., 0].min() == 255 and image[..., 1].max() == 0


def test_a_4d_array_that_is_not_a_frame_stack_is_not_an_image() -> None:
    assert as_image(np.zeros((100, 84, 84, 3), np.uint8)) is None
    assert as_image(np.zeros((4, 84, 84, 7), np.uint8)) is None
