#!/usr/bin/env bash
# Which tools and Python interpreters this host has: one fact per line, read by core/probes/checks/facts.py.
# Usage: facts.sh PYFACTS_SCRIPT [PYTHON ...]   (interpreters to try, most preferred first; ~ means $HOME)
# Lines: "tool NAME PATH", "uid N", "gpu <nvidia-smi -L line>", "events 0|1", "python<TAB>PATH<TAB>JSON".
pyfacts=$1
shift
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
for py in "$@"; do
  case "$py" in "~/"*) py="$HOME/${py#\~/}" ;; esac
  path=$(command -v "$py" 2>/dev/null) || continue
  case "$seen" in *" $path "*) continue ;; esac
  seen="$seen$path "
  out=$($limit "$path" "$pyfacts" 2>/dev/null | tail -n 1)
  [ -n "$out" ] || out='{}'
  printf 'python\t%s\t%s\n' "$path" "$out"
done
exit 0
