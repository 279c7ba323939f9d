"""A probe run: its options, the checks run on a worker thread, the events it yields, and a recorded
run replayed."""
