#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian/Ubuntu machine, then run pytest.
# System packages: sshd and fio for the probe integration tests, Xvfb/Qt libraries for the GUI tests,
# poppler-utils (pdftoppm) for PDF checks, appstream (appstreamcli validates the AppStream metainfo), Slurm and
# munge (without their recommended extras) for the single-machine Slurm the `--slurm` probe's tests start
# (tests/integration/slurm.py). Python: the project with its test extras and CPU torch (torch.distributed/gloo
# for the collective probe's tests) and the launch formats' parsers (the `launch` extra: DeepSpeed, accelerate,
# shellcheck, jsonschema). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

. packaging/debian.sh
# shellcheck disable=SC2086
apt_install python3-venv openssh-server openssh-client fio xvfb poppler-utils iproute2 procps appstream \
  $QT_RUNTIME_PACKAGES
apt_install --no-install-recommends slurmctld slurmd slurm-client munge
if command -v apt-get >/dev/null; then as_root mkdir -p /run/sshd; fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# SkyPilot reads the launch task back (sky.Task.from_yaml) in a virtual environment of its own: its seventy
# dependencies (an API server's) stay out of the project's. It installs in the background while the rest does.
mkdir -p build
( [ -x .venv-skypilot/bin/python ] || python3 -m venv .venv-skypilot
  .venv-skypilot/bin/python -m pip install -q "skypilot==0.14.1" ) > build/skypilot-install.log 2>&1 &
SKYPILOT_PID=$!
# torchtune reads its recipe config back (`tune validate`) in one too: torchtune 0.6.1 with the CPU torch above
# (never another: a newer torch is gigabytes) and torchao pinned to 0.11.0, which imports with both: torchtune
# imports torchao when it validates, and later torchao (0.18.0) no longer has torchao.dtypes.nf4tensor.
( [ -x .venv-torchtune/bin/python ] || python3 -m venv .venv-torchtune
  .venv-torchtune/bin/python -m pip install -q "torch==2.13.0" "torchtune==0.6.1" "torchao==0.11.0" \
  ) > build/torchtune-install.log 2>&1 &
TORCHTUNE_PID=$!
.venv/bin/python -m pip install -q -e ".[test]"
# CPU torch for the gloo all_reduce tests; optional outside CI (those tests skip with the reason).
.venv/bin/python -m pip install -q "torch==2.13.0" || { [ "${CI:-}" = true ] && exit 1; \
  echo "tuneplan: torch not installed; collective tests will be skipped" >&2; }
# The launch formats' parsers, after torch so that DeepSpeed finds the torch above instead of pulling its own.
if .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q -e ".[launch]" || { [ "${CI:-}" = true ] && exit 1; \
    echo "tuneplan: launch parsers not installed; their tests will be skipped" >&2; }
fi

# The desktop bundle is built and its frozen app smoke-tested (packaging/build.sh) in CI, or when asked: in the
# background while the checks below run (PyInstaller is single-threaded); its failure fails the run.
BUILD_PID=
if [ "${CI:-}" = true ] || [ "${TUNEPLAN_BUNDLE:-}" = 1 ]; then
  .venv/bin/python -m pip install -q -e ".[bundle]"
  bash packaging/build.sh --no-install > build/bundle-build.log 2>&1 &
  BUILD_PID=$!
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/lint-imports
.venv/bin/mypy
if ! wait "$SKYPILOT_PID"; then
  cat build/skypilot-install.log >&2
  [ "${CI:-}" = true ] && exit 1
  echo "tuneplan: SkyPilot not installed; its read-back test will be skipped" >&2
fi
if ! wait "$TORCHTUNE_PID"; then
  cat build/torchtune-install.log >&2
  [ "${CI:-}" = true ] && exit 1
  echo "tuneplan: torchtune not installed; its read-back test will be skipped" >&2
fi
if [ -n "$BUILD_PID" ]; then
  if wait "$BUILD_PID"; then tail -n 3 build/bundle-build.log; else
    cat build/bundle-build.log >&2; echo "tuneplan: the bundle build failed" >&2; exit 1; fi
fi
# No QT_QPA_PLATFORM here: the GUI tests start their own Xvfb (tests/gui/xvfb.py) and click and type in a real
# window; a test that needs Qt headless (the `tuneplan report` subprocess) sets offscreen itself. Two test
# processes, each test file in one of them (loadfile: a file's fixtures and servers stay in one process).
.venv/bin/python -m pytest -n "${TUNEPLAN_TEST_PROCESSES:-2}" --dist loadfile "$@"
