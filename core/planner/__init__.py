"""The planning engine: pure functions from a PlanRequest to a PlanResult."""
