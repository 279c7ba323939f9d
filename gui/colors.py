"""Series colours shared by the on-screen charts and the PDF (Okabe–Ito: safe for colour-vision deficiencies)."""

from __future__ import annotations

SERIES_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
HIGHLIGHT = "#D55E00"
MUTED = "#8c8c8c"
