"""The Summary page's "Export launch files…", used as a person uses it: click the button, tick a
format, click into the folder field and type the path key by key, click Export, read the message,
find the files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from tests.gui.wizard_driver import click, next_page, settle, type_like_a_person

# The window's own first plan is planned with a search; this request fixes the hardware so the files
# are known: 8 × H100 in one node, LoRA, no sharding: dp 8, accumulation 64 / (1 × 8) = 8.
REQUEST = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": 2e8, "seq_len": 4096},
    "training": {
        "method": "lora",
        "micro_batch_size": 1,
        "global_batch_size": 64,
        "sharding": "none",
    },
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1},
}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Folders are typed as ~/…, short as a person types them; ~ is this test's folder."""
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def to_summary(qtbot, window, tmp_path: Path):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST))
    assert window.open_request(path)
    wizard = window.wizard
    settle(qtbot, wizard.state)
    while wizard.currentPage() is not wizard.summary_page:
        next_page(qtbot, wizard)
    return wizard.summary_page


def tick(qtbot, box) -> None:
    """Click on the check box's square, where a person clicks (the widget is wider than its
    label)."""
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))


def open_dialog(qtbot, summary):
    assert summary.launch_button.isEnabled()
    click(qtbot, summary.launch_button)
    qtbot.waitUntil(lambda: summary.launch_dialog is not None and summary.launch_dialog.isVisible())
    return summary.launch_dialog


def test_export_one_format_by_typing_the_folder(qtbot, window, tmp_path: Path) -> None:
    summary = to_summary(qtbot, window, tmp_path)
    dialog = open_dialog(qtbot, summary)
    assert not dialog.export_button.isEnabled()  # nothing chosen yet
    tick(qtbot, dialog.boxes["deepspeed"])
    assert dialog.boxes["deepspeed"].isChecked() and not dialog.all_box.isChecked()
    out = tmp_path / "launch"
    type_like_a_person(qtbot, dialog.folder, "~/launch")
    assert dialog.folder.text() == "~/launch"
    # every key went to the field the click focused
    assert QApplication.focusWidget() is dialog.folder
    click(qtbot, dialog.export_button)
    qtbot.waitUntil(lambda: dialog.message.text().startswith("Wrote"))
    assert sorted(p.name for p in out.iterdir()) == ["ds_config.README.md", "ds_config.json"]
    ds = json.loads((out / "ds_config.json").read_text())
    assert (
        ds["train_micro_batch_size_per_gpu"],
        ds["gradient_accumulation_steps"],
        ds["train_batch_size"],
    ) == (1, 8, 64)
    assert dialog.message.text() == f"Wrote 2 file(s) to {out}: ds_config.json, ds_config.README.md"


def test_all_formats_writes_what_fits_and_names_what_does_not(
    qtbot, window, tmp_path: Path
) -> None:
    summary = to_summary(qtbot, window, tmp_path)
    dialog = open_dialog(qtbot, summary)
    tick(qtbot, dialog.all_box)
    assert all(box.isChecked() for box in dialog.boxes.values())
    out = tmp_path / "all"
    type_like_a_person(qtbot, dialog.folder, "~/all")
    click(qtbot, dialog.export_button)
    qtbot.waitUntil(lambda: dialog.message.text().startswith("Wrote"))
    names = sorted(p.name for p in out.iterdir())
    # torchtune runs several GPUs only with FSDP and in bf16 without fp32 master weights: it says
    # so, by name.
    assert names == [
        "accelerate_config.yaml",
        "axolotl_config.yaml",
        "ds_config.README.md",
        "ds_config.json",
        "k8s_common.yaml",
        "k8s_jobset.yaml",
        "k8s_trainjob.yaml",
        "sky_task.yaml",
        "torchrun.sh",
        "train.sbatch",
    ]
    lines = dialog.message.text().splitlines()
    assert lines[0].startswith(f"Wrote 10 file(s) to {out}")
    assert lines[1:] == [
        "torchtune: training.sharding none on 8 GPUs: torchtune's distributed recipes shard fully "
        "with FSDP2; plan with sharding fsdp (or zero3)"
    ]
    # Unticking one format clears "All formats".
    tick(qtbot, dialog.boxes["slurm"])
    assert not dialog.all_box.isChecked()


def test_export_runs_on_a_worker_in_the_live_window(qtbot, live_window, tmp_path: Path) -> None:
    """The window as `tuneplan` runs it (a worker thread): the files arrive and the message says
    so."""
    summary = to_summary(qtbot, live_window, tmp_path)
    dialog = open_dialog(qtbot, summary)
    tick(qtbot, dialog.boxes["slurm"])
    out = tmp_path / "live"
    type_like_a_person(qtbot, dialog.folder, "~/live")
    click(qtbot, dialog.export_button)
    qtbot.waitUntil(
        lambda: dialog.message.text() == f"Wrote 1 file(s) to {out}: train.sbatch", timeout=10000
    )
    assert "#SBATCH --gpus-per-node=8" in (out / "train.sbatch").read_text()
    dialog.close()


def test_kubernetes_writes_the_manifests_with_the_requests_queue(
    qtbot, window, tmp_path: Path
) -> None:
    """A request naming a Kueue queue (launch.kueue_queue), opened in the window: ticking kubernetes
    alone writes the common objects and the two job files, the jobs in that queue, 8 GPUs a pod."""
    path = tmp_path / "queued.json"
    path.write_text(json.dumps(REQUEST | {"launch": {"kueue_queue": "team-a"}}))
    assert window.open_request(path)
    wizard = window.wizard
    settle(qtbot, wizard.state)
    while wizard.currentPage() is not wizard.summary_page:
        next_page(qtbot, wizard)
    dialog = open_dialog(qtbot, wizard.summary_page)
    tick(qtbot, dialog.boxes["kubernetes"])
    # the request's own
    assert dialog.chosen() == ["kubernetes"] and dialog.queue.text() == "team-a"
    out = tmp_path / "k8s"
    type_like_a_person(qtbot, dialog.folder, "~/k8s")
    click(qtbot, dialog.export_button)
    qtbot.waitUntil(lambda: dialog.message.text().startswith("Wrote"))
    assert (
        dialog.message.text()
        == f"Wrote 3 file(s) to {out}: k8s_common.yaml, k8s_trainjob.yaml, k8s_jobset.yaml"
    )
    trainjob = yaml.safe_load((out / "k8s_trainjob.yaml").read_text())
    service, jobset = yaml.safe_load_all((out / "k8s_jobset.yaml").read_text())
    for job in (trainjob, jobset):
        assert (
            job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
            and job["spec"]["suspend"]
        )
    assert trainjob["spec"]["trainer"]["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == 8
    assert service["kind"] == "Service"


def test_a_queue_typed_in_the_dialog_is_checked_then_written(qtbot, window, tmp_path: Path) -> None:
    """The Kueue field is for kubernetes only; a name Kubernetes would refuse is one sentence and
    nothing is written; a good one, with PyTorchJob ticked, is the PyTorchJob's queue label."""
    dialog = open_dialog(qtbot, to_summary(qtbot, window, tmp_path))
    assert not dialog.queue.isEnabled() and not dialog.pytorchjob_box.isEnabled()
    tick(qtbot, dialog.boxes["kubernetes"])
    assert dialog.queue.isEnabled() and dialog.queue.text() == ""
    type_like_a_person(qtbot, dialog.folder, "~/q")
    type_like_a_person(qtbot, dialog.queue, "Team A")
    assert dialog.queue.hasFocus()  # every key went to the field the click focused
    click(qtbot, dialog.export_button)
    assert dialog.message.text() == (
        "launch.kueue_queue 'Team A' is not a Kubernetes name: use 1 to 63 lowercase "
        "letters, digits and '-', starting and ending with a letter or digit"
    )
    out = tmp_path / "q"
    assert not out.exists()
    type_like_a_person(qtbot, dialog.queue, "gpu-q")
    tick(qtbot, dialog.pytorchjob_box)
    click(qtbot, dialog.export_button)
    qtbot.waitUntil(lambda: dialog.message.text().startswith("Wrote"))
    assert sorted(p.name for p in out.iterdir()) == ["k8s_common.yaml", "k8s_pytorchjob.yaml"]
    job = yaml.safe_load((out / "k8s_pytorchjob.yaml").read_text())
    assert (
        job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-q"
        and job["spec"]["runPolicy"]["suspend"]
    )
