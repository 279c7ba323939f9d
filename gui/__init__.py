"""The tuneplan window: a thin PySide6 + pyqtgraph layer over `core` (which never imports Qt)."""
