"""The planning domain: a PlanRequest (models.py) in, a PlanResult out, from pure functions over the catalog.

Also what is built on a plan: its analysis and report (the PDF's content) and the plan library (store.py).
"""
