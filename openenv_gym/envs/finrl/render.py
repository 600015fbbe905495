"""The FinRL-v0 chart: portfolio value against equal-weight buy-and-hold, as an RGB array.

matplotlib (Agg backend) loads on the first render only.

Example:
    >>> import numpy as np
    >>> days = np.arange("2016-01-04", "2016-01-08", dtype="datetime64[D]")
    >>> chart(days, np.array([1.0, 1.1, 1.2, 1.1]), np.array([1.0, 1.0, 1.1, 1.2])).shape
    (320, 640, 3)
"""

from __future__ import annotations

import numpy as np

__all__ = ["chart"]


def chart(dates: np.ndarray, values: np.ndarray, benchmark: np.ndarray, title: str = "FinRL-v0",
          size: tuple[int, int] = (640, 320)) -> np.ndarray:
    """Draw the two value curves.

    Args:
        dates: ``(T,)`` dates of the full window (x axis).
        values: Portfolio values so far (``len <= T``).
        benchmark: Equal-weight buy-and-hold values over the same days.
        title: Figure title.
        size: Width and height in pixels.

    Returns:
        ``(height, width, 3)`` uint8.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # A bare Figure + Agg canvas: no pyplot global state, safe in a threaded server.
    fig = Figure(figsize=(size[0] / 100, size[1] / 100), dpi=100)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    x = dates.astype("datetime64[D]").astype(object)
    ax.plot(x[: len(values)], values, label="portfolio", color="tab:blue")
    ax.plot(x[: len(benchmark)], benchmark, label="equal-weight buy & hold", color="tab:gray", lw=1)
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()
