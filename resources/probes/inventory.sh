#!/usr/bin/env bash
# The box as it describes itself, in "### name" sections read by core/probes/checks/inventory.py.
# Needs no root; every part tolerates a missing tool.
section() { printf '\n### %s\n' "$1"; }
section hostname; hostname 2>/dev/null || cat /proc/sys/kernel/hostname 2>/dev/null
section os-release; cat /etc/os-release 2>/dev/null
section uname; uname -srm 2>/dev/null
section lscpu; LC_ALL=C lscpu 2>/dev/null
section nproc; nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null
section meminfo; head -n 5 /proc/meminfo 2>/dev/null
section virt; systemd-detect-virt --vm 2>/dev/null
section container; systemd-detect-virt --container 2>/dev/null
[ -e /.dockerenv ] && echo docker-env
[ -e /run/.containerenv ] && echo podman-env
section cgroup; head -n 20 /proc/1/cgroup 2>/dev/null
section df; df -PT -B1 2>/dev/null
section links; ip -o link 2>/dev/null
section speeds
for dev in /sys/class/net/*; do
  [ -e "$dev" ] || continue
  name=${dev##*/}
  speed=$(cat "$dev/speed" 2>/dev/null)
  state=$(cat "$dev/operstate" 2>/dev/null)
  printf '%s %s %s\n' "$name" "${speed:--}" "${state:--}"
done
section shm; df -P -B1 /dev/shm 2>/dev/null | tail -n 1
section memlock; ulimit -l 2>/dev/null
exit 0
