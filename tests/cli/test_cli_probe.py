"""`tuneplan probe` as a user runs it: the verdict it prints for this machine, and what reaches the
terminal when the target is not an SSH server (one sentence, exit 5, no traceback)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cli.main import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
needs_gpu_less_host = pytest.mark.skipif(
    shutil.which("nvidia-smi") is not None,
    reason="this machine has nvidia-smi: the GPU-less verdict cannot be seen",
)


@needs_gpu_less_host
def test_probing_this_gpu_less_machine_says_it_is_not_ready_for_gpu_training(tmp_path, capsys):
    code = cli_main(
        ["probe", "--local", "--suite", "inventory,health", "--db", str(tmp_path / "p.db")]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "verdict: NOT READY for GPU training: no NVIDIA GPU found.\n" in out
    # the count fails; the checks that need a GPU are there as INFO lines
    assert re.search(
        r"^FAIL +inventory +GPU count and model +no NVIDIA GPU found +at least one NVIDIA GPU "
        r"\(for GPU training\)$",
        out,
        re.MULTILINE,
    )
    for name in ("Whole GPUs (no MIG)", "PCIe link", "ECC errors", "Xid errors since boot"):
        assert re.search(
            rf"^INFO +\w+ +{re.escape(name)} +no NVIDIA GPU found +—$", out, re.MULTILINE
        ), name
    assert err == ""


@needs_gpu_less_host
def test_a_run_that_measured_nothing_has_no_verdict_and_says_why(tmp_path, capsys):
    code = cli_main(["probe", "--local", "--suite", "gpu_metrics", "--db", str(tmp_path / "p.db")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert (
        "No verdict: no probe produced any evidence to grade (gpu_metrics skipped: no NVIDIA GPU "
        "found (nvidia-smi is not installed on the host))."
    ) in out
    assert "READY" not in out


@contextmanager
def not_ssh_server(behaviour: str) -> Iterator[int]:
    """A TCP server on 127.0.0.1 that answers every connection with something other than SSH: an
    HTTP error and binary junk, or nothing at all (it closes at once). Yields its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                if behaviour == "garbage":
                    conn.sendall(
                        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
                        + bytes(range(256)) * 4
                    )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        server.close()


def run_tuneplan(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`tuneplan ARGS` in a process of its own, as from a shell: what it writes to the terminal is
    all there is."""
    env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "PYTHONWARNINGS")}
    env.update(PYTHONPATH=str(ROOT), HOME=str(home), XDG_DATA_HOME=str(home / "data"))
    return subprocess.run(
        [sys.executable, "-m", "tuneplan", *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("behaviour", ["garbage", "close"])
def test_a_port_that_does_not_speak_ssh_gets_one_sentence_and_exit_5(tmp_path, behaviour):
    with not_ssh_server(behaviour) as port:
        done = run_tuneplan(
            "probe",
            f"nobody@127.0.0.1:{port}",
            "--known-hosts",
            str(tmp_path / "kh"),
            "--suite",
            "inventory",
            "--db",
            str(tmp_path / "p.db"),
            home=tmp_path,
        )
    assert done.returncode == 5
    assert done.stderr == (
        f"tuneplan: host 127.0.0.1:{port} does not answer as an SSH server: it sent no SSH "
        "greeting before closing; check the host and the port\n"
    )
    assert done.stdout == ""


def test_verbose_shows_the_ssh_log_the_plain_run_keeps_quiet(tmp_path):
    with not_ssh_server("close") as port:
        done = run_tuneplan(
            "probe",
            f"nobody@127.0.0.1:{port}",
            "--verbose",
            "--known-hosts",
            str(tmp_path / "kh"),
            "--suite",
            "inventory",
            "--db",
            str(tmp_path / "p.db"),
            home=tmp_path,
        )
    assert done.returncode == 5
    assert (
        "paramiko.transport" in done.stderr and "Error reading SSH protocol banner" in done.stderr
    )
    assert done.stderr.endswith("check the host and the port\n")


def test_a_target_with_a_newline_inside_is_one_sentence_and_exit_2(tmp_path):
    done = run_tuneplan(
        "probe", "root@127.0.0.1\n:22", "--db", str(tmp_path / "p.db"), home=tmp_path
    )
    assert done.returncode == 2
    assert done.stderr == (
        "tuneplan: target 'root@127.0.0.1\\n:22' holds a control character (a newline, tab or "
        "the like); expected [user@]host[:port], e.g. ubuntu@10.0.0.5:2222 or [::1]:2222\n"
    )
    assert done.stdout == ""


def test_a_port_given_twice_that_disagrees_is_refused_as_the_window_refuses_it(tmp_path):
    """--port beside a target naming another port: the same sentence as the host form's Port beside
    such a target (tests/gui/test_probe_hosts.py), never one of the two dropped; one that agrees
    connects as usual."""
    done = run_tuneplan(
        "probe",
        "root@127.0.0.1:2022",
        "--port",
        "2222",
        "--db",
        str(tmp_path / "p.db"),
        home=tmp_path,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "tuneplan: target 'root@127.0.0.1:2022' names port 2022 and port 2222 is also given; "
        "give the port once\n"
    )
    with not_ssh_server("close") as port:
        agrees = run_tuneplan(
            "probe",
            f"nobody@127.0.0.1:{port}",
            "--port",
            str(port),
            "--known-hosts",
            str(tmp_path / "kh"),
            "--suite",
            "inventory",
            "--db",
            str(tmp_path / "p.db"),
            home=tmp_path,
        )
    assert (
        agrees.returncode == 5
        and f"host 127.0.0.1:{port} does not answer as an SSH server" in agrees.stderr
    )


@pytest.mark.parametrize(
    ("text", "size"),
    [
        # decimal, as the README says 80G is
        ("80G", 80 * 10**9),
        ("80GB", 80 * 10**9),
        ("256M", 256 * 10**6),
        ("80GiB", 80 * 2**30),
        ("80Gi", 80 * 2**30),
        ("1048576", 2**20),
    ],
)
def test_fio_size_reads_sizes_as_every_field_does(text: str, size: int) -> None:
    from cli.probe import parse_size

    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("80Gb", "--fio-size: '80Gb' could be bits; write 80GB for bytes"),
        ("1M", "--fio-size '1M' is 1,000,000 bytes; the test file needs at least 1 MiB"),
        ("lots", "--fio-size: 'lots' is not a size"),
    ],
)
def test_fio_size_refuses_bits_and_too_small_in_one_sentence(text: str, words: str) -> None:
    from cli import probe

    with pytest.raises(probe.ProbeExit) as caught:
        probe.parse_size(text)
    assert str(caught.value).startswith(words) and "\n" not in str(caught.value)
