"""tuneplan core: the planner and the probes over one catalog, with a command line on top. Pure Python; never
imports Qt (docs/architecture.md is the map).
"""
