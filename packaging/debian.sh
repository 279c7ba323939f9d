# Sourced by install.sh and test.sh: root for apt-get (directly, or through sudo where it exists) and the
# system libraries Qt 6's xcb platform needs on Debian/Ubuntu (QT_DEBUG_PLUGINS=1 names a missing one).
QT_RUNTIME_PACKAGES="libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3 libxcb-cursor0
  libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-xinerama0 libxcb-randr0 libxcb-render-util0 libxcb-image0
  fonts-dejavu-core"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
  echo "tuneplan: this step needs root (run the script as root): $*" >&2; return 1; fi; }

# apt_install PACKAGE...: quietly, where apt-get exists (elsewhere the packages are the user's to provide).
apt_install() {
  command -v apt-get >/dev/null || return 0
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
