"""A plan that cannot run shows no money on any surface: the Time & cost and Summary pages of a real
window, and the PDF report read back with pypdf (the JSON and the CLI text:
tests/core/test_plan_verdicts.py)."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

from pypdf import PdfReader
from PySide6.QtCore import QModelIndex
from PySide6.QtWidgets import QAbstractItemView, QLabel, QWidget

from tests.gui.test_gui_pages_answers import go_to, open_request
from tuneplan.launch import main

# The reproduction: 1T parameters, full fine-tune, one 24 GB RTX 4090 (marketplace-priced,
# sold at $1,599).
UNFIT = {
    "model": {"params": "1T"},
    "data": {"tokens": 2e8},
    "training": {"method": "full"},
    "hardware": {"gpu": "RTX-4090", "gpus_per_node": 1, "nodes": 1},
}


def shown_texts(page: QWidget) -> list[str]:
    """Every label and table cell a person can see on the page."""
    texts = [
        label.text()
        for label in page.findChildren(QLabel)
        if label.isVisibleTo(page) and label.text()
    ]
    for view in page.findChildren(QAbstractItemView):
        model = view.model()
        if view.isVisibleTo(page) and model is not None:
            # a list model has one column
            texts += [
                str(model.index(row, col).data() or "")
                for row in range(model.rowCount(QModelIndex()))
                for col in range(64)
                if model.index(row, col).isValid()
            ]
    return texts


def test_the_window_shows_no_money_for_a_plan_that_cannot_run(qtbot, window, tmp_path: Path):
    wizard = window.wizard
    open_request(qtbot, window, tmp_path, UNFIT)
    cost = wizard.cost_page
    go_to(qtbot, wizard, cost)
    assert "no cost" in cost.headline.text() and "does not fit" in cost.headline.text()
    for page in (cost, wizard.summary_page):
        go_to(qtbot, wizard, page)
        texts = shown_texts(page)
        assert texts, page
        priced = [
            t for t in texts if "$" in t or re.search(r"\bprice (age|seen)\b", t, re.IGNORECASE)
        ]
        assert priced == [], priced
    assert not cost.providers_view.isVisibleTo(cost)


def test_the_pdf_of_a_plan_that_cannot_run_has_no_money(qapp, tmp_path: Path):
    request = tmp_path / "request.json"
    request.write_text(json.dumps(UNFIT))
    pdf = tmp_path / "unfit.pdf"
    assert main(["report", str(request), "-o", str(pdf)]) == 0
    text = unicodedata.normalize(
        "NFKC", "\n".join(p.extract_text() or "" for p in PdfReader(str(pdf)).pages)
    )
    text = re.sub(r"[ \t]+", " ", text)  # pypdf puts tabs between words
    assert "does not fit" in text
    assert "$" not in text and "undated" not in text  # no price, so no price's date either
    shown_only_when_priced = (
        "Price age",
        "cost per GPU-hour against utilisation",
        "Compute cost by provider",
        "Final checkpoint archive",
    )
    for absent in shown_only_when_priced:
        assert absent not in text, absent
