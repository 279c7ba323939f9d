"""Fixed-size sample history where any window of recent samples is one contiguous NumPy slice.

Friture's trick (``friture/ringbuffer.py``): every sample is written twice, at ``i`` and ``i +
capacity``, so the newest ``n`` samples always sit side by side and the redraw timer hands pyqtgraph
a view, never a copy or a concatenation. Pure NumPy (no Qt), so it is tested and benchmarked on its
own.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.floating]


class RingBuffer:
    """``channels`` float32 series sharing one float64 time axis, keeping the last ``capacity``
    samples."""

    def __init__(self, channels: int, capacity: int) -> None:
        if channels < 1 or capacity < 1:
            raise ValueError(
                f"channels and capacity must be at least 1, got {channels} and {capacity}"
            )
        self.channels, self.capacity = channels, capacity
        self._t = np.full(2 * capacity, np.nan, dtype=np.float64)
        self._v = np.full((channels, 2 * capacity), np.nan, dtype=np.float32)
        self._head = 0  # next slot to write, in [0, capacity)
        self.written = 0  # samples ever written (more than capacity once it wrapped)

    def __len__(self) -> int:
        return min(self.written, self.capacity)

    def extend(self, t: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Append ``k`` samples: ``t`` shape (k,), ``values`` shape (channels, k); NaN marks a
        missing value."""
        t_arr = np.asarray(t, dtype=np.float64).reshape(-1)
        v_arr = np.asarray(values, dtype=np.float32).reshape(self.channels, -1)
        k = t_arr.shape[0]
        if v_arr.shape[1] != k:
            raise ValueError(f"values has {v_arr.shape[1]} samples per channel but t has {k}")
        if k == 0:
            return
        if k > self.capacity:  # only the newest capacity samples can be kept
            t_arr, v_arr = t_arr[-self.capacity :], v_arr[:, -self.capacity :]
            self.written += k - self.capacity
            k = self.capacity
        slots = (self._head + np.arange(k)) % self.capacity
        for offset in (0, self.capacity):
            self._t[slots + offset] = t_arr
            self._v[:, slots + offset] = v_arr
        self._head = int((self._head + k) % self.capacity)
        self.written += k

    def last(self, n: int | None = None) -> tuple[FloatArray, FloatArray]:
        """Views (not copies) of the newest ``n`` samples, oldest first: times (n,), values
        (channels, n)."""
        count = len(self) if n is None else max(0, min(n, len(self)))
        end = self._head + self.capacity
        return self._t[end - count : end], self._v[:, end - count : end]

    def since(self, t_min: float) -> tuple[FloatArray, FloatArray]:
        """Views of the samples with time ≥ ``t_min`` (times are kept ascending by the writer)."""
        t, v = self.last()
        start = int(np.searchsorted(t, t_min, side="left"))
        return t[start:], v[:, start:]

    @property
    def latest_t(self) -> float | None:
        return float(self._t[self._head + self.capacity - 1]) if self.written else None

    def clear(self) -> None:
        self._t.fill(np.nan)
        self._v.fill(np.nan)
        self._head = 0
        self.written = 0
