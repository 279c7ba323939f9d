"""The probing domain: reach a host (transport/), run the probes (checks/, runner), keep what they measured
(store), and judge it (scorecard/) for the report, the window and, through apply.py, the plan.
"""
