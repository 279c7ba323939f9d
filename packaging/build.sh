#!/usr/bin/env bash
# Build the desktop bundle: a PyInstaller one-folder app in dist/tuneplan/, smoke-tested frozen, and a tarball
# dist/tuneplan-VERSION-linux-ARCH.tar.gz with the .desktop file and icons beside the app.
# Uses the project's virtual environment (.venv, made by packaging/install.sh or test.sh) unless PYTHON is set.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || { echo "build.sh: no $PY; run bash packaging/install.sh --no-run first (or set PYTHON)" >&2; exit 1; }
# --no-install: the environment already has the bundle extra (packaging/test.sh installs it before the tests).
[ "${1:-}" = --no-install ] || "$PY" -m pip install -q -e ".[bundle]"
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN --distpath dist --workpath build/pyinstaller \
  packaging/tuneplan.spec
cp resources/desktop/tuneplan.desktop dist/tuneplan/
cp resources/icons/tuneplan.svg dist/tuneplan/tuneplan.svg

# The frozen app must start and find its resources; and the smoke test must notice when they are missing.
"$PY" packaging/smoke_test.py dist/tuneplan
"$PY" packaging/smoke_test.py dist/tuneplan --without-resources

VERSION=$("$PY" -c 'from importlib.metadata import version; print(version("tuneplan"))')
TARBALL="dist/tuneplan-$VERSION-linux-$(uname -m).tar.gz"
tar -C dist -czf "$TARBALL" tuneplan
echo "bundle: dist/tuneplan ($(du -sh dist/tuneplan | cut -f1)), $TARBALL ($(du -h "$TARBALL" | cut -f1))"
# An AppImage needs appimagetool, which neither Debian nor PyPI packages; the tarball is the download.
if command -v appimagetool >/dev/null; then
  echo "build.sh: appimagetool found but the AppDir recipe is not written yet; tarball only" >&2
fi
