"""Bad input shows one clear message at the right place, blocks Next, and keeps everything else
typed."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QWizard

from tests.gui.wizard_driver import choose, click, next_page, settle, type_like_a_person


def next_enabled(wizard) -> bool:
    return wizard.button(QWizard.WizardButton.NextButton).isEnabled()


def config_tab(qtbot, wizard):
    """Click the model page's "config.json" tab, as a user would."""
    page = wizard.model_page
    bar = page.tabs.tabBar()
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(1).center())
    assert page.tabs.currentIndex() == 1
    return page


def field(page, path):
    return next(f for f in page.fields if f.path == path)


def test_malformed_config_json_is_explained_under_the_box(qtbot, live_window):
    wizard, state = live_window.wizard, live_window.wizard.state
    next_page(qtbot, wizard)
    type_like_a_person(qtbot, field(wizard.data_page, "data.tokens").edit, "3e8")
    next_page(qtbot, wizard)
    type_like_a_person(qtbot, wizard.method_page.rank.edit, "64")
    settle(qtbot, state)
    wizard.restart()
    page = config_tab(qtbot, wizard)
    type_like_a_person(qtbot, page.config_edit, '{"hidden_size": 4096, "num_hidden_layers": 32,')
    settle(qtbot, state)
    assert page.config_error.isVisible()
    assert page.config_error.text().startswith("config.json is not valid JSON")
    assert "line 1" in page.config_error.text()
    assert not next_enabled(wizard)
    assert not wizard.model_page.page_error.isVisible()  # said once, under the box
    # no figures of the model that was there before
    assert page.summary.text() == "" and state.analysis is None
    # What was typed stays, and the rest of the request is untouched.
    assert page.config_edit.toPlainText().endswith('"num_hidden_layers": 32,')
    assert state.get("data.tokens") == "3e8" and state.get("training.lora_rank") == "64"
    # Paste the rest of the JSON at its end: the message goes and the model is the one typed (32
    # layers, hidden 4096), not the preset.
    assert QApplication.focusWidget() is page.config_edit
    QApplication.clipboard().setText(
        ' "num_attention_heads": 14, "num_key_value_heads": 2, '
        '"intermediate_size": 4864, "vocab_size": 151936, "tie_word_embeddings": true}'
    )
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    settle(qtbot, state)
    assert not page.config_error.isVisible()
    assert next_enabled(wizard)
    assert state.get("model.hidden_size") == 4096 and "preset" not in state.get("model")
    assert "32 layers, hidden 4096, 14 attention heads (2 key/value)" in page.summary.text()
    assert state.get("data.tokens") == "3e8"


def test_config_without_hidden_size_names_the_key(qtbot, window):
    page = config_tab(qtbot, window.wizard)
    page.config_edit.setPlainText('{"num_hidden_layers": 32}')
    settle(qtbot, window.wizard.state)
    assert "hidden_size" in page.config_error.text()
    assert not next_enabled(window.wizard)


def drop_file(qtbot, wizard, page, path: Path) -> None:
    """Drag a file from the file manager onto the config.json box and drop it."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    at = QPoint(5, 5)
    buttons, mods = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    # QPoint: Qt's signature
    enter = QDragEnterEvent(at, Qt.DropAction.CopyAction, mime, buttons, mods)
    QApplication.sendEvent(page.config_edit.viewport(), enter)
    assert enter.isAccepted()
    drop = QDropEvent(at.toPointF(), Qt.DropAction.CopyAction, mime, buttons, mods)
    QApplication.sendEvent(page.config_edit.viewport(), drop)
    settle(qtbot, wizard.state)


def test_a_named_pipe_dropped_as_config_json_is_one_sentence_not_a_frozen_window(
    qtbot, window, tmp_path: Path
):
    """Reading a pipe nobody writes to blocks forever; the window refuses it before opening it for a
    read."""
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    page = config_tab(qtbot, window.wizard)
    drop_file(qtbot, window.wizard, page, fifo)
    assert page.config_error.isVisible()
    assert page.config_error.text().endswith("config.json is a named pipe, not a file")
    assert not next_enabled(window.wizard)


def test_a_config_nested_thousands_deep_is_one_sentence_under_the_box(qtbot, window):
    page = config_tab(qtbot, window.wizard)
    QApplication.clipboard().setText('{"hidden_size": ' + "[" * 5000 + "]" * 5000 + "}")
    qtbot.mouseClick(page.config_edit.viewport(), Qt.MouseButton.LeftButton)
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    settle(qtbot, window.wizard.state)
    assert (
        page.config_error.text()
        == "config.json nests deeper than JSON can be read here (at most 64 levels)"
    )
    assert not next_enabled(window.wizard)


def test_config_json_from_a_dropped_file(qtbot, window, tmp_path: Path):
    # Qwen2.5-0.5B config.json keys (huggingface.co/Qwen/Qwen2.5-0.5B): 24 layers, hidden 896, 14
    # heads, 2 KV heads.
    cfg = tmp_path / "config.json"
    cfg.write_text(
        '{"hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14, '
        '"num_hidden_layers": 24, "num_key_value_heads": 2, "vocab_size": 151936, '
        '"tie_word_embeddings": true, "max_position_embeddings": 32768, "model_type": "qwen2"}'
    )
    page = config_tab(qtbot, window.wizard)
    drop_file(qtbot, window.wizard, page, cfg)
    assert not page.config_error.isVisible(), (
        page.config_error.text(),
        page.config_edit.toPlainText()[:80],
    )
    assert window.wizard.state.get("model.hidden_size") == 896
    assert "24 layers, hidden 896, 14 attention heads (2 key/value)" in page.summary.text()
    # Qwen reports 0.49B parameters for Qwen2.5-0.5B.
    assert "494" in page.summary.text() or "0.49B" in page.summary.text()
    assert next_enabled(window.wizard)


def test_out_of_range_sequence_length_is_shown_under_its_field(qtbot, live_window):
    wizard, state = live_window.wizard, live_window.wizard.state
    next_page(qtbot, wizard)
    fields = {f.path: f for f in wizard.data_page.fields}
    type_like_a_person(qtbot, fields["data.tokens"].edit, "1.5B")
    type_like_a_person(qtbot, fields["data.seq_len"].edit, "8")
    settle(qtbot, state)
    seq = fields["data.seq_len"]
    assert seq.error.isVisible()
    assert seq.error.text() == "8 is out of range: use 16 to 2,097,152"  # both ends of the range
    assert not fields["data.tokens"].error.isVisible()
    assert not next_enabled(wizard)
    assert seq.edit.text() == "8" and fields["data.tokens"].edit.text() == "1.5B"
    type_like_a_person(qtbot, seq.edit, "2048")
    settle(qtbot, state)
    assert not seq.error.isVisible()
    assert next_enabled(wizard)


def test_garbage_token_count_names_the_accepted_forms(qtbot, live_window):
    wizard, state = live_window.wizard, live_window.wizard.state
    next_page(qtbot, wizard)
    tokens = next(f for f in wizard.data_page.fields if f.path == "data.tokens")
    type_like_a_person(qtbot, tokens.edit, "lots")
    settle(qtbot, state)
    assert "2e8, 200M, 1.5B" in tokens.error.text()
    assert not next_enabled(wizard)


def test_sequence_longer_than_the_model_context_is_a_planner_error_at_the_field(qtbot, live_window):
    wizard, state = live_window.wizard, live_window.wizard.state
    next_page(qtbot, wizard)
    seq = next(f for f in wizard.data_page.fields if f.path == "data.seq_len")
    # Llama 3.1 8B: max_position_embeddings 131072 (its config.json).
    type_like_a_person(qtbot, seq.edit, "200000")
    settle(qtbot, state)
    assert "131072" in seq.error.text()
    assert not next_enabled(wizard)
    assert state.analysis is None


def test_impossible_plan_is_explained_on_the_memory_page(qtbot, live_window):
    """Llama 3.1 405B, full fine-tune, at most 8 GPUs: 405B × 16 bytes of model state = 6.5 TB, more
    than eight of the largest cards in the catalog hold (8 × 192 GB = 1.5 TB)."""
    wizard, state = live_window.wizard, live_window.wizard.state
    for _ in range(4):
        next_page(qtbot, wizard)
    type_like_a_person(qtbot, wizard.hardware_page.max_gpus.edit, "8")
    settle(qtbot, state)
    wizard.restart()
    page = wizard.model_page
    type_like_a_person(qtbot, page.filter, "405b")
    index = page.proxy.index(0, 0)
    qtbot.mouseClick(
        page.list.viewport(), Qt.MouseButton.LeftButton, pos=page.list.visualRect(index).center()
    )
    next_page(qtbot, wizard)
    type_like_a_person(qtbot, field(wizard.data_page, "data.tokens").edit, "1.5B")
    next_page(qtbot, wizard)
    choose(qtbot, wizard.method_page.method.combo, "full")
    settle(qtbot, state)
    click(qtbot, wizard.button(QWizard.WizardButton.NextButton))
    settle(qtbot, state)
    memory = wizard.memory_page
    assert wizard.currentPage() is memory
    assert memory.page_error.isVisible()
    text = memory.page_error.text()
    assert text.startswith("nothing fits") and "up to 8 GPUs" in text and "search.max_gpus" in text
    assert not next_enabled(wizard)
    assert memory.chart.message.text() == "no plan"
    # Everything typed is still there.
    assert state.get("model") == {"preset": "llama-3.1-405b"}
    assert state.get("training.method") == "full" and state.get("data.tokens") == "1.5B"
    assert state.get("search.max_gpus") == "8"
    # Back to something that fits (QLoRA, up to 512 GPUs): the message goes and Next returns.
    back = wizard.button(QWizard.WizardButton.BackButton)
    click(qtbot, back)
    choose(qtbot, wizard.method_page.method.combo, "qlora")
    state.set("search.max_gpus", None)
    settle(qtbot, state)
    next_page(qtbot, wizard)
    assert not memory.page_error.isVisible()
    assert next_enabled(wizard)


def test_new_fields_are_validated_where_they_are(qtbot, live_window):
    wizard, state = live_window.wizard, live_window.wizard.state
    next_page(qtbot, wizard)
    files = field(wizard.data_page, "data.file_count")
    type_like_a_person(qtbot, files.edit, "0")
    settle(qtbot, state)
    assert (
        files.error.isVisible() and files.error.text() == "0 is out of range: use 1 to 1e12 files"
    )
    assert not next_enabled(wizard)
    type_like_a_person(qtbot, files.edit, "")
    settle(qtbot, state)
    assert not files.error.isVisible() and state.get("data.file_count") is None
    state.update_many({}, {"hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 2}})
    settle(qtbot, state)
    for _ in range(3):
        next_page(qtbot, wizard)
    hardware = wizard.hardware_page
    assert wizard.currentPage() is hardware
    type_like_a_person(qtbot, hardware.bandwidth.edit, "-5")
    settle(qtbot, state)
    assert hardware.bandwidth.error.isVisible()
    assert "-5 is out of range: use more than 0" in hardware.bandwidth.error.text()
    assert not next_enabled(wizard)
    assert hardware.bandwidth.edit.text() == "-5"
    type_like_a_person(qtbot, hardware.bandwidth.edit, "1600")
    settle(qtbot, state)
    assert next_enabled(wizard)
    next_page(qtbot, wizard)
    mtbf = field(wizard.cost_page, "assumptions.gpu_mtbf_hours")
    type_like_a_person(qtbot, mtbf.edit, "0")
    settle(qtbot, state)
    assert mtbf.error.isVisible() and "0 is out of range: use more than 0" in mtbf.error.text()
    assert not next_enabled(wizard)
    assert state.get("hardware.inter_node_gbps") == "1600"


def test_offload_without_sharding_is_a_page_message_on_method(qtbot, window):
    wizard, state = window.wizard, window.wizard.state
    next_page(qtbot, wizard)
    next_page(qtbot, wizard)
    state.set("training.offload", "optimizer")
    settle(qtbot, state)
    page = wizard.method_page
    assert "needs sharding" in page.page_error.text()
    assert not next_enabled(wizard)


def test_remembered_price_and_discount_go_to_the_user_overrides(
    qtbot, live_window, user_dirs: Path
):
    wizard, state = live_window.wizard, live_window.wizard.state
    state.update_many({}, {"hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1}})
    state.set("pricing.provider", "aws")
    settle(qtbot, state)
    for _ in range(5):
        next_page(qtbot, wizard)
    page = wizard.cost_page
    override = page.override.edit
    type_like_a_person(qtbot, override, "1.99")
    settle(qtbot, state)
    click(qtbot, page.keep_price)
    prices = (user_dirs / "config" / "tuneplan" / "prices.json").read_text()
    assert '"on_demand": 1.99' in prices and '"gpu": "H100-SXM"' in prices
    assert "Kept $1.99/GPU-h" in page.keep_message.text()
    type_like_a_person(qtbot, page.discount.edit, "0.2")
    settle(qtbot, state)
    click(qtbot, page.keep_discount)
    discounts = (user_dirs / "config" / "tuneplan" / "discounts.json").read_text()
    assert '"aws": 0.2' in discounts
    assert state.get("pricing.discount") is None  # not applied twice
    # Every provider row shows the date of its prices.
    for row in range(page.providers.rowCount()):
        cells = page.providers.row(row).cells[1:4]
        assert all(c == "—" or "(" in c for c in cells)
