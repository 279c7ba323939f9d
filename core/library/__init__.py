"""The plan library: saved plans on disk (SQLite), not planning."""
