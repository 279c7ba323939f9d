"""Probing several hosts as one cluster: every node's own suite in parallel, then what needs them
all."""
