"""Render a real cluster run in the Probe place to docs/screenshots/probe-cluster-*.png: the node
table and the inter-node busbw chart once the all_reduce between the nodes has run, then the cluster
scorecard. Run it in a real window: ``xvfb-run -a -s "-screen 0 1920x1200x24" .venv/bin/python
packaging/screenshots_cluster.py [OUT_DIR]`` (without a display it falls back to Qt's offscreen
platform).

Nothing is replayed: the two nodes are both this machine (``LocalTransport``), each runs its own
inventory suite and then the cluster steps run for real between them — the c10d rendezvous, torchrun
across the two "nodes" and the gloo all_reduce sweep — with this Python (and its torch) as the host
Python. The nodes are labelled for what they are. The pane only connects saved SSH hosts, so the
connection is stood in for with the two local transports, as packaging/screenshots_probe.py does for
one host. Everything is written to a throwaway user folder.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "packaging"))
# A real window where there is a display (docs are made under `xvfb-run`), else offscreen.
os.environ.setdefault("QT_QPA_PLATFORM", "xcb" if os.environ.get("DISPLAY") else "offscreen")
os.environ["PYQTGRAPH_QT_LIB"] = "PySide6"

from screenshots_probe import SIZE, save, wait  # noqa: E402

NODES = ("node-a (this machine)", "node-b (this machine)")
GROUP = "pair (this machine twice)"


def host_python_options(choice: Any) -> Any:
    """The pane's own options, with this interpreter (it has torch) as the host Python on both
    nodes."""
    from gui.probe import backend

    return backend.make_options(choice).model_copy(update={"python": sys.executable})


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="tuneplan-cluster-shots-"))
    os.environ["XDG_CONFIG_HOME"] = str(scratch / "config")
    os.environ["XDG_DATA_HOME"] = str(scratch / "data")
    from core.probes.history.host_groups import HostGroup, save_group
    from core.probes.history.records import HostProfile
    from core.probes.history.store import ProbeStore
    from core.probes.transport.local import LocalTransport
    from gui.app import make_app
    from gui.probe.pane import ProbePane
    from gui.workers import ThreadExecutor

    app = make_app(["screenshots"])
    store = ProbeStore(scratch / "probes.db")
    profiles = [HostProfile(name=name, target="localhost") for name in NODES]
    for profile in profiles:
        store.save_host(profile)
    save_group(store, HostGroup(name=GROUP, hosts=list(NODES)))
    executor = ThreadExecutor()
    pane = ProbePane(
        executor, store, make_options=host_python_options, known_hosts_file=scratch / "known_hosts"
    )
    pane.resize(*SIZE)
    pane.show()
    pane.hosts.select(GROUP)
    # stand in for the SSH connections: both nodes are this machine
    pane.link.pending = pane.hosts.current()
    pane.link.nodes_connected([(profile, LocalTransport()) for profile in profiles])
    pane.suite.set_choice(("inventory",))
    if not pane.start():
        raise RuntimeError(f"the cluster run did not start: {pane.status.text()}")
    wait(lambda: not pane.running, seconds=300, what="the cluster run ending")
    pane.tabs.setCurrentIndex(0)
    save(pane, out / "probe-cluster-live.png")
    pane.tabs.setCurrentIndex(1)
    save(pane, out / "probe-cluster-scorecard.png")
    pane.shutdown()
    executor.stop_all(5000)
    store.close()
    pane.close()
    app.processEvents()
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots")
    )
