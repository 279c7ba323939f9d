#!/usr/bin/env bash
# Install tuneplan into ./.venv (its own environment) and, unless --no-run, open the window.
# Debian/Ubuntu: installs the few system libraries Qt needs (as root, or via sudo when available).
set -euo pipefail
cd "$(dirname "$0")/.."

. packaging/debian.sh
# shellcheck disable=SC2086
apt_install python3-venv $QT_RUNTIME_PACKAGES
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
echo "tuneplan installed in $(pwd)/.venv — run .venv/bin/tuneplan"
if [ "${1:-}" != "--no-run" ]; then exec .venv/bin/tuneplan; fi
