"""tuneplan core: the planner, the probes, storage and reports. Pure Python; never imports Qt."""
