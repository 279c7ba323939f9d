#!/usr/bin/env bash
# Install tuneplan into ./.venv (its own environment) and, unless --no-run, open the window.
# Debian/Ubuntu: installs the few system libraries Qt needs (as root, or via sudo when available).
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
  echo "tuneplan: please install as root: $*" >&2; return 1; fi; }

if command -v apt-get >/dev/null; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv libegl1 libgl1 libxkbcommon0 \
    libxkbcommon-x11-0 libfontconfig1 libdbus-1-3 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 \
    libxcb-shape0 libxcb-xinerama0 libxcb-randr0 libxcb-render-util0 libxcb-image0 fonts-dejavu-core >/dev/null
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
echo "tuneplan installed in $(pwd)/.venv — run .venv/bin/tuneplan"
if [ "${1:-}" != "--no-run" ]; then exec .venv/bin/tuneplan; fi
