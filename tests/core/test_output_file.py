"""Every file tuneplan writes goes through one writer that never follows a link at the final name,
refuses what is not a regular file, and takes the format from the suffix it was given.

Real symlinks and FIFOs on the real file system: `tuneplan report -o`, `tuneplan probe-report -o`,
`--install-desktop-entry` and the launch files are run as a user runs them (cli.main in-process; the
PDFs themselves are checked in tests/gui/test_pdf_outputs.py, where the renderer is installed). A
test that would hang on a named pipe (the old writers opened it and waited for a reader) has a
timeout.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from cli import desktop_entry
from cli.common import CliError
from cli.main import main
from core.output_file import OutputError, format_of, write_file
from tests.replayed_run import replayed_run_file

VICTIM = "the user's own file\n"
REQUEST = {
    "model": {"preset": "llama-3.1-8b"},
    "data": {"tokens": "2e8"},
    "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8},
}


def _request(tmp_path: Path) -> str:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST), encoding="utf-8")
    return str(path)


def _run(tmp_path: Path) -> str:
    return str(replayed_run_file(tmp_path))


def _planted(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A symlink at `name` pointing at a file of the user's: what a planted link looks like."""
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM, encoding="utf-8")
    victim.chmod(0o600)
    link = tmp_path / name
    link.symlink_to(victim)
    return link, victim


def _one_sentence(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("tuneplan: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("command", ["report", "probe-report"])
def test_a_symlink_at_the_output_name_is_replaced_never_written_through(
    tmp_path: Path, command: str
) -> None:
    link, victim = _planted(tmp_path, "out.json")
    source = _request(tmp_path) if command == "report" else _run(tmp_path)
    assert main([command, source, "-o", str(link)]) == 0
    assert victim.read_text(encoding="utf-8") == VICTIM
    assert not link.is_symlink() and stat.S_ISREG(link.lstat().st_mode)
    assert json.loads(link.read_text(encoding="utf-8"))["title"]  # the report's content, as JSON
    if command == "probe-report":  # it names the host: only its owner may read it
        assert stat.S_IMODE(link.stat().st_mode) == 0o600


@pytest.mark.timeout(30)
@pytest.mark.parametrize("command", ["report", "probe-report"])
def test_a_named_pipe_at_the_output_name_is_refused_not_waited_on(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    source = _request(tmp_path) if command == "report" else _run(tmp_path)
    assert main([command, source, "-o", str(fifo)]) == 1
    assert "out.json is a named pipe, not a file" in _one_sentence(capsys)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.parametrize("name", ["plan.txt", "plan", "plan.pdf.bak"])
def test_an_output_suffix_that_names_no_format_is_refused(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", _request(tmp_path), "-o", str(tmp_path / name)]) == 1
    assert "must end in .pdf or .json" in _one_sentence(capsys)
    assert not (tmp_path / name).exists()


def test_json_named_output_holds_json_not_a_pdf(tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    assert main(["report", _request(tmp_path), "-o", str(out)]) == 0
    assert not out.read_bytes().startswith(b"%PDF")
    assert json.loads(out.read_text(encoding="utf-8"))["sections"]


def test_install_desktop_entry_replaces_a_planted_link_and_refuses_a_pipe(tmp_path: Path) -> None:
    apps = tmp_path / "share" / "applications"
    apps.mkdir(parents=True)
    link, victim = _planted(apps, "tuneplan.desktop")
    written = desktop_entry.install(tmp_path / "share")
    assert link in written and victim.read_text(encoding="utf-8") == VICTIM
    assert not link.is_symlink() and link.read_text(encoding="utf-8").startswith("[Desktop Entry]")
    link.unlink()
    os.mkfifo(link)
    with pytest.raises(CliError, match=r"tuneplan\.desktop is a named pipe, not a file"):
        desktop_entry.install(tmp_path / "share")


@pytest.mark.parametrize(
    "folder", ["/opt/tune\nExec=rm -rf ~/tuneplan", "/opt/tune\tplan", "/opt/tune\x1bplan"]
)
def test_a_control_character_in_the_install_folder_never_reaches_the_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    monkeypatch.setattr(sys, "executable", f"{folder}/bin/python")
    with pytest.raises(CliError, match="holds a control character") as caught:
        desktop_entry.install(tmp_path)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "applications" / "tuneplan.desktop").exists()


def test_the_writer_refuses_a_folder_and_a_missing_folder(tmp_path: Path) -> None:
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(OutputError, match=r"dir\.json is a folder, not a file"):
        write_file(tmp_path / "dir.json", "{}")
    with pytest.raises(OutputError, match=r"the folder .*missing does not exist"):
        write_file(tmp_path / "missing" / "x.json", "{}")
    with pytest.raises(OutputError, match=r"must end in \.pdf"):
        format_of(tmp_path / "x.PDF.txt", {".pdf": "pdf"})
    assert format_of(tmp_path / "X.PDF", {".pdf": "pdf"}) == "pdf"
    # no temporary file left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.json"]
