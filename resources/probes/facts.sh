#!/usr/bin/env bash
# Which tools and Python interpreters this host has: one fact per line, read by core/probes/checks/facts.py.
# Usage: facts.sh PYFACTS_SCRIPT [--envs] [PYTHON ...]   (interpreters to try, most preferred first; ~ means
# $HOME). --envs first tries the environments the login shell activates: a conda env or venv active in this
# shell, else in an interactive shell (where ~/.bashrc's `conda activate` usually sits, after its
# "not interactive: return" line).
# Lines: "tool NAME PATH", "uid N", "gpu <nvidia-smi -L line>", "events 0|1", "python<TAB>PATH<TAB>JSON",
# "pyfrom<TAB>PATH<TAB>how it was found".
pyfacts=$1
shift
envs=()
if [ "$1" = "--envs" ]; then
  shift
  add_env() {  # $1 the env's prefix, $2 what it is
    [ -n "$1" ] && [ -x "$1/bin/python" ] && envs+=("$1/bin/python" "$2")
  }
  add_env "$CONDA_PREFIX" "the conda env active in the login shell (${CONDA_DEFAULT_ENV:-$CONDA_PREFIX})"
  add_env "$VIRTUAL_ENV" "the venv active in the login shell ($VIRTUAL_ENV)"
  if [ ${#envs[@]} -eq 0 ] && command -v timeout >/dev/null 2>&1; then
    shell=${SHELL:-bash}
    case "$shell" in */bash|*/zsh|*/ksh|bash|zsh) ;; *) shell=bash ;; esac
    line=$(timeout 20 "$shell" -ic 'printf "\n__tuneplan_env %s|%s|%s\n" "$CONDA_PREFIX" "$CONDA_DEFAULT_ENV" "$VIRTUAL_ENV"' \
      </dev/null 2>/dev/null | grep '^__tuneplan_env ' | tail -n 1)
    IFS='|' read -r conda_prefix conda_name venv <<< "${line#__tuneplan_env }"
    add_env "$conda_prefix" "the conda env an interactive shell activates (${conda_name:-$conda_prefix})"
    add_env "$venv" "the venv an interactive shell activates ($venv)"
  fi
fi
for tool in nvidia-smi all_reduce_perf fio dmesg journalctl ibstat ibstatus timeout setsid ethtool lscpu nproc \
    systemd-detect-virt df ip sudo dd torchrun ibv_devinfo ib_write_bw dcgmi mpirun srun; do
  found=$(command -v "$tool" 2>/dev/null) && printf 'tool %s %s\n' "$tool" "$found"
done
printf 'uid %s\n' "$(id -u 2>/dev/null)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L 2>/dev/null | grep '^GPU ' | sed 's/^/gpu /'
  if nvidia-smi --help-query-gpu 2>/dev/null | grep -q 'clocks_event_reasons.active'; then
    echo "events 1"
  else
    echo "events 0"
  fi
fi
limit=""
command -v timeout >/dev/null 2>&1 && limit="timeout 90"
seen=" "
try_python() {  # $1 the interpreter as named, $2 how it was found
  local py=$1 path out
  case "$py" in "~/"*) py="$HOME/${py#\~/}" ;; esac
  path=$(command -v "$py" 2>/dev/null) || return 0
  case "$seen" in *" $path "*) return 0 ;; esac
  seen="$seen$path "
  out=$($limit "$path" "$pyfacts" 2>/dev/null | tail -n 1)
  [ -n "$out" ] || out='{}'
  printf 'python\t%s\t%s\n' "$path" "$out"
  printf 'pyfrom\t%s\t%s\n' "$path" "$2"
}
for ((i = 0; i < ${#envs[@]}; i += 2)); do
  try_python "${envs[i]}" "${envs[i + 1]}"
done
for py in "$@"; do
  case "$py" in
    */*) try_python "$py" "$py" ;;
    *) try_python "$py" "'$py' on the login shell's PATH" ;;
  esac
done
exit 0
