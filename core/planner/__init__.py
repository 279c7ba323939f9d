"""The planning domain: a PlanRequest (models.py) in, a PlanResult out, from pure functions over the catalog.

Grouped by question: `model/` (the model and what each GPU holds), `speed/` (how long a step takes), `money/` (what
it costs and what can go wrong), `choose/` (which hardware to pick); `plan.py` composes them, `analysis.py` and
`report.py` build what the window and the PDF show. The plan library is persistence, in core/library/.
"""
