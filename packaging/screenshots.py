"""Render the window to docs/screenshots/*.png: the first run's sample plan, every wizard page (a
page taller than the window also scrolled, as ``-2``, ``-3`` …), a config.json error, the library, a
comparison, the catalog, the chart pages again with the dark palette (``dark-*``), and the PDF
report's pages (through pdftoppm). Run it in a real window: ``xvfb-run -a -s "-screen 0
1920x1200x24" .venv/bin/python packaging/screenshots.py [OUT_DIR]`` (``--only-launch`` retakes only
the Summary page and its launch-files dialog) (without a display it falls back to Qt's offscreen
platform).

It plans real requests from the shipped catalog in a throwaway user folder, so the user's own
library and price overrides are never read or written. Files it writes are replaced; ``probe*``
files belong to the Probe place's own script and ``ranges-*`` to
``packaging/screenshots_ranges.py``; both are left alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# A real window where there is a display (docs are made under `xvfb-run`), else offscreen.
os.environ.setdefault("QT_QPA_PLATFORM", "xcb" if os.environ.get("DISPLAY") else "offscreen")
os.environ["PYQTGRAPH_QT_LIB"] = "PySide6"

from PySide6.QtCore import QCoreApplication, QSettings  # noqa: E402
from PySide6.QtWidgets import QScrollArea, QWidget  # noqa: E402

SIZE = (1280, 1000)
PAGE_NAMES = ("model", "data", "method", "memory", "hardware", "cost", "summary")
REQUEST = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": "2e8", "seq_len": 4096},
    "training": {"method": "lora", "lora_rank": 16},
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1},
    "pricing": {"provider": "aws"},
}


def scratch_folder(prefix: str) -> Path:
    """A throw-away folder made the user's config and data folders, so that no picture shows (or
    touches) the library and settings of whoever takes it."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ["XDG_CONFIG_HOME"] = str(scratch / "config")
    os.environ["XDG_DATA_HOME"] = str(scratch / "data")
    return scratch


def planning_window(scratch: Path) -> tuple[Any, Any]:
    """The application and a shown main window over the scratch folder's library and settings,
    planning inline (every plan lands before the next picture)."""
    from core.library.store import PlanStore
    from gui.app import make_app
    from gui.main_window import MainWindow
    from gui.workers import InlineExecutor

    app = make_app(["screenshots"])
    window = MainWindow(
        InlineExecutor(),
        PlanStore(scratch / "library.db"),
        QSettings(str(scratch / "settings.ini"), QSettings.Format.IniFormat),
        debounce_ms=0,
    )
    window.resize(*SIZE)
    window.show()
    return app, window


def pdf_first_page(analysis: Any, scratch: Path, out: Path, stem: str) -> None:
    """The plan's PDF rendered and its first page written as out/stem.png at 60 dpi (pdftoppm)."""
    from core.planner.report import build_report
    from gui.pdf import render_report

    pdf = scratch / "plan.pdf"
    render_report(build_report(analysis), pdf)
    subprocess.run(
        [
            "pdftoppm",
            "-png",
            "-r",
            "60",
            "-f",
            "1",
            "-l",
            "1",
            "-singlefile",
            str(pdf),
            str(out / stem),
        ],
        check=True,
        timeout=120,
    )
    print(out / f"{stem}.png")


def turn_to(wizard: Any, page: Any) -> None:
    """Next, as a person clicks it, until the wizard shows `page` (each page's plan settled on the
    way)."""
    while wizard.currentPage() is not page:
        wizard.next()
        settle(wizard.state)


def close_window(app: Any, window: Any, scratch: Path) -> int:
    """Close the window, let Qt finish, remove the scratch folder; 0, the exit status of a run that
    got here."""
    window.close()
    app.processEvents()
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


def settle(state: object) -> None:
    """Let the debounce timer fire and the inline plan land."""
    for _ in range(200):
        QCoreApplication.processEvents()
        if not getattr(state, "pending", False) and not getattr(state, "busy", False):
            return
    raise RuntimeError("the plan did not settle")


def wait(condition: Callable[[], object], seconds: float, what: str) -> None:
    """Run the event loop until ``condition()`` holds; RuntimeError saying ``what`` did not happen
    in time."""
    end = time.monotonic() + seconds
    while not condition():
        QCoreApplication.processEvents()
        time.sleep(0.01)
        if time.monotonic() > end:
            raise RuntimeError(f"{what} did not happen within {seconds:g} s")


def save(widget: QWidget, path: Path) -> None:
    QCoreApplication.processEvents()
    if not widget.grab().save(str(path)):
        raise RuntimeError(f"cannot write {path}")
    print(path)


def save_page(window: QWidget, page: QWidget, path: Path) -> None:
    """The window as the user sees the page, then scrolled a screen at a time until the page's
    end."""
    save(window, path)
    scroll = page.findChild(QScrollArea)
    if scroll is None:
        return
    bar = scroll.verticalScrollBar()
    k = 2
    while bar.value() < bar.maximum():
        bar.setValue(min(bar.value() + bar.pageStep(), bar.maximum()))
        save(window, path.with_name(f"{path.stem}-{k}.png"))
        k += 1
    bar.setValue(0)


def main(out: Path, only_launch: bool = False) -> int:
    out.mkdir(parents=True, exist_ok=True)
    scratch = scratch_folder("tuneplan-shots-")
    app, window = planning_window(scratch)
    window.add_probe_place()  # in the sidebar as `tuneplan` shows it; these pictures do not open it
    wizard, state = window.wizard, window.wizard.state
    for old in [] if only_launch else out.glob("*.png"):
        # their own scripts take them
        if not old.name.startswith(("probe", "ranges", "not-fit", "step")):
            old.unlink()
    from gui.wizard.first_run import open_sample

    open_sample(wizard)  # what an empty library opens on (MainWindow.create_default)
    settle(state)
    save(window, out / "first-run.png")
    wizard.load_request(REQUEST, name="Llama 3.1 8B LoRA on 8× H100")
    settle(state)
    for i, name in enumerate(PAGE_NAMES):
        if not only_launch or name == "summary":
            save_page(window, wizard.currentPage(), out / f"wizard-{i + 1}-{name}.png")
        if i + 1 < len(PAGE_NAMES):
            wizard.next()
            settle(state)
    launch_dialog(window, out, scratch)
    if only_launch:  # --only-launch: the Summary page and its dialog, the rest left as they are
        window.close()
        shutil.rmtree(scratch, ignore_errors=True)
        return 0
    window.save_as_new(wizard.display_name)
    dark_pages(app, window, out)
    wizard.restart()
    model_page = wizard.model_page
    model_page.tabs.setCurrentIndex(1)
    model_page.config_edit.setPlainText('{"hidden_size": 4096, "num_hidden_layers": 32,')
    settle(state)
    save(window, out / "wizard-1-model-config-error.png")
    # one L40S at the cheapest provider: AWS sells L40S one to an instance (g6e.xlarge), so four at
    # AWS would be no node anyone rents
    qlora = {
        **REQUEST,
        "training": {"method": "qlora", "lora_rank": 16},
        "hardware": {"gpu": "L40S", "gpus_per_node": 1, "nodes": 1},
        "pricing": {},
    }
    wizard.load_request(qlora, name="Llama 3.1 8B QLoRA on 1× L40S")
    settle(state)
    window.save_as_new(wizard.display_name)
    window.show_place("Library")
    save(window, out / "library.png")
    ids = [r.id for r in window.store.list()]
    window.library.select_ids(ids[:2])
    dialog = window.library.compare_selected()
    if dialog is not None:
        dialog.resize(1000, 760)
        save(dialog, out / "compare.png")
        dialog.close()
    catalog_shot(window, out)
    window.show_place("Plan")
    wizard.load_request(REQUEST, name="Llama 3.1 8B LoRA on 8× H100")  # the PDF of the priced plan
    settle(state)
    from core.planner.report import build_report
    from gui.pdf import render_report

    assert state.analysis is not None
    pdf = scratch / "plan.pdf"
    pages = render_report(build_report(state.analysis), pdf)
    if shutil.which("pdftoppm"):
        subprocess.run(
            ["pdftoppm", "-r", "80", "-png", str(pdf), str(out / "report-page")],
            check=True,
            timeout=120,
        )
        print(f"{pages} report pages")
    else:
        print("pdftoppm not found: report pages not rendered", file=sys.stderr)
    window.close()
    app.processEvents()
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


def catalog_shot(window: QWidget, out: Path) -> None:
    """The Catalog place narrowed to the H100 SXM, cheapest first: the records a plan's price comes
    from."""
    from PySide6.QtCore import Qt

    from gui.catalog.view import HEADER, CatalogView

    window.show_place("Catalog")  # type: ignore[attr-defined]
    view = window.places["Catalog"]  # type: ignore[attr-defined]
    assert isinstance(view, CatalogView)
    view.gpu.setCurrentIndex(view.gpu.findData("H100-SXM"))
    view.table.sortByColumn(HEADER.index("USD/GPU-h"), Qt.SortOrder.AscendingOrder)
    save(window, out / "catalog.png")


def launch_dialog(window: QWidget, out: Path, scratch: Path) -> None:
    """The Summary page's "Export launch files…" after exporting every format into a scratch
    folder."""
    summary = window.wizard.summary_page  # type: ignore[attr-defined]
    summary.open_launch_dialog()
    dialog = summary.launch_dialog
    dialog.all_box.setChecked(True)
    dialog.folder.setText(str(scratch / "launch"))
    dialog.export()
    dialog.resize(720, 380)
    save(dialog, out / "launch-dialog.png")
    dialog.close()


def dark_pages(app: QCoreApplication, window: QWidget, out: Path) -> None:
    """The pages with charts again under the dark palette: what a dark system scheme shows."""
    from PySide6.QtWidgets import QApplication

    from gui.app import dark_palette

    assert isinstance(app, QApplication)
    light = app.palette()
    app.setPalette(dark_palette())
    wizard = window.wizard  # type: ignore[attr-defined]
    wizard.restart()
    for _ in range(3):
        wizard.next()
    for i, name in ((4, "memory"), (5, "hardware"), (6, "cost")):
        save_page(window, wizard.currentPage(), out / f"dark-wizard-{i}-{name}.png")
        wizard.next()
    app.setPalette(light)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--only-launch"]
    raise SystemExit(
        main(Path(args[0]) if args else ROOT / "docs" / "screenshots", "--only-launch" in sys.argv)
    )
