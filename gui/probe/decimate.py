"""Peak decimation of a time window before it is handed to pyqtgraph (pure NumPy, no Qt).

pyqtgraph's own peak downsampling works per curve and keeps about five samples per pixel; doing it
once per GPU for all its metrics, down to one min/max pair per pixel column, cuts both the
``setData`` work and the path the painter strokes, and looks the same: a width-1 line cannot show
more than a pixel column's extremes.
"""

from __future__ import annotations

import numpy as np

from gui.probe.ring import FloatArray


def peak_decimate(x: FloatArray, values: FloatArray, columns: int) -> tuple[FloatArray, FloatArray]:
    """Reduce ``n`` samples to at most ``2 × columns`` points: each bin's min and max at the bin's
    first x.

    ``values`` is (channels, n); NaN (a missing value) is ignored unless a whole bin is NaN. Bins
    are counted from the newest sample, so the oldest ``n mod bin`` samples (the window's left edge)
    are left out.
    """
    n = int(x.shape[0])
    if columns < 1 or n <= 2 * columns:
        return x, values
    size = -(-n // columns)  # samples per bin, rounded up
    bins = n // size
    start = n - bins * size
    xb = x[start::size]
    vb = values[:, start:].reshape(values.shape[0], bins, size)
    low, high = np.fmin.reduce(vb, axis=2), np.fmax.reduce(vb, axis=2)
    out_x = np.repeat(xb, 2)
    out_v = np.empty((values.shape[0], 2 * bins), dtype=values.dtype)
    out_v[:, 0::2], out_v[:, 1::2] = low, high
    return out_x, out_v
