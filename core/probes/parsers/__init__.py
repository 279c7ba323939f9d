"""Pure parsers of GPU-node tool output: text in, :class:`~core.probes.samples.ParseResult` out,
never raise.

One module per tool so a driver or tool update touches one file; all share ``_common`` for cleaning
text.
"""

from core.probes.parsers.dcgm import parse_dcgmi_diag
from core.probes.parsers.dmesg import parse_dmesg
from core.probes.parsers.fio import parse_fio_json
from core.probes.parsers.ib import (
    parse_ibstat,
    parse_ibstatus,
    parse_ibv_devinfo,
    parse_link_flaps,
    parse_perftest,
)
from core.probes.parsers.nccl_debug import parse_nccl_debug
from core.probes.parsers.nccl_tests import parse_nccl_tests
from core.probes.parsers.nvidia_smi_dmon import parse_dmon
from core.probes.parsers.nvidia_smi_nvlink import parse_nvlink_status
from core.probes.parsers.nvidia_smi_q import parse_nvidia_smi_q
from core.probes.parsers.nvidia_smi_query import QueryGpuStream, iter_query_gpu, parse_query_gpu
from core.probes.parsers.nvidia_smi_table import parse_nvidia_smi_table
from core.probes.parsers.nvidia_smi_topo import parse_topo_matrix

__all__ = [
    "QueryGpuStream",
    "iter_query_gpu",
    "parse_dcgmi_diag",
    "parse_dmesg",
    "parse_dmon",
    "parse_fio_json",
    "parse_ibstat",
    "parse_ibstatus",
    "parse_ibv_devinfo",
    "parse_link_flaps",
    "parse_nccl_debug",
    "parse_nccl_tests",
    "parse_nvidia_smi_q",
    "parse_nvidia_smi_table",
    "parse_nvlink_status",
    "parse_perftest",
    "parse_query_gpu",
    "parse_topo_matrix",
]
