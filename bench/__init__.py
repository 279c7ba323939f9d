"""Benchmarks that print figures and ratios against the performance budgets in DESIGN §7."""
