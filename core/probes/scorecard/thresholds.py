"""Readiness thresholds and reference figures, each with the public source it comes from.

The scorecard grades measurements against these numbers only, so a provider SLA or a new driver
generation changes one table here. Figures and bands follow the project's probe research (expected
figures §2 and the proposed scorecard §4 of its PROBES notes); every constant names the page that
supports it. GB/s is 1e9 B/s as nccl-tests prints it, TFLOP/s is dense bf16.
"""

from __future__ import annotations

from typing import NamedTuple

# --------------------------------------------------------------------------- sources (pinned where
# possible)

NCCL_TESTS_README = (
    "https://github.com/NVIDIA/nccl-tests/blob/a0b82b2260cf5152b9f8c061bbf7eaf0ba096432/README.md"
)
NCCL_TESTS_PERF = "https://github.com/NVIDIA/nccl-tests/blob/a0b82b2260cf5152b9f8c061bbf7eaf0ba096432/doc/PERFORMANCE.md"
NCCL_TESTS_212 = "https://github.com/NVIDIA/nccl-tests/issues/212"
NCCL_TESTS_119 = "https://github.com/NVIDIA/nccl-tests/issues/119"
NCCL_TESTS_71 = "https://github.com/NVIDIA/nccl-tests/issues/71"
NCCL_450 = "https://github.com/NVIDIA/nccl/issues/450"
NCCL_209 = "https://github.com/NVIDIA/nccl/issues/209"
AZURE_NHC = "https://github.com/Azure/azurehpc-health-checks"
AZURE_THROTTLE = (
    "https://github.com/Azure/azurehpc-health-checks/blob/0e0a1ac26a64b32ac4dd7632a529638505d3314a/"
    "customTests/azure_gpu_clock_throttling.nhc"
)
AZURE_XID = (
    "https://github.com/Azure/azurehpc-health-checks/blob/0e0a1ac26a64b32ac4dd7632a529638505d3314a/"
    "customTests/azure_gpu_xid.nhc"
)
IMBUE_HEALTH = (
    "https://github.com/imbue-ai/cluster-health/blob/8f5964ac620931138ed29f43557557048e826cd7/"
    "health_checks/health_checks.py"
)
XID_CATALOG = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
NVIDIA_DPR = "https://docs.nvidia.com/deploy/dynamic-page-retirement/visibility.html"
NVIDIA_SMI_MAN = "https://man.archlinux.org/man/extra/nvidia-utils/nvidia-smi.1.en"
STAS00 = "https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a725203a7/"
STAS00_NETWORK = STAS00 + "network/README.md"
STAS00_NETWORK_DEBUG = STAS00 + "network/debug/README.md"
STAS00_ACCELERATOR = STAS00 + "compute/accelerator/README.md"
STAS00_DEBUG = STAS00 + "compute/accelerator/nvidia/debug.md"
STAS00_STORAGE = STAS00 + "storage/README.md"
STAS00_DIST_TEST = STAS00 + "debug/torch-distributed-gpu-test.py"
STAS00_BENCH = STAS00 + "network/benchmarks/all_reduce_bench.py"
GPU_FRYER = "https://github.com/huggingface/gpu-fryer"
ROCM_ACCEPTANCE = "https://github.com/ROCm/system-acceptance-docs"
OCI_NCCL_A100 = (
    "https://github.com/oracle-japan/ocitutorials/blob/40114268892c1cbd63aec7c636818fe320ddf1c9/"
    "content/hpc/benchmark/run-nccltests-ubuntu/index.md"
)
GCP_FILESTORE = "https://docs.cloud.google.com/filestore/docs/service-tiers-zonal"


class Band(NamedTuple):
    """PASS at or above ``pass_at``, WARN at or above ``warn_at``, FAIL below (ratios or absolute
    values)."""

    pass_at: float
    warn_at: float


# --------------------------------------------------------------------------- collectives (busbw)

# Single node: in-place busbw at the largest size against the reference; nccl-tests' own
# NCCL_TESTS_MIN_BW check fails below 0.9 x the value, Azure NHC fails below its per-SKU figure.
NCCL_INTRA_BAND = Band(0.90, 0.75)
NCCL_INTRA_SOURCE = (
    f"nccl-tests NCCL_TESTS_MIN_BW uses 0.9 ({NCCL_TESTS_README}); Azure NHC single-size method"
)
# Across nodes: ring busbw >= 80 % of NICs x per-NIC figure (sjeaugey: ~48 GB/s per 400G, 24 per
# 200G, 12 per 100G).
NCCL_INTER_BAND = Band(0.80, 0.60)
NCCL_PER_NIC_EFFICIENCY = 0.96  # 48 GB/s of the 50 GB/s a 400 Gb/s port carries
NCCL_INTER_SOURCE = f"sjeaugey, nccl-tests#119 ({NCCL_TESTS_119}); {STAS00_NETWORK_DEBUG}"
# NCCL over TCP sockets reaches <= 60 % of the wire, often < 50 % (nccl#450, nccl#209): expect half
# the wire.
TCP_EFFICIENCY = 0.5
TCP_SOURCE = f"nccl#450 ({NCCL_450}); nccl#209 ({NCCL_209})"
# The torch fallback benchmark is blocking, like nccl-tests -z 1: same thresholds minus ~5 %.
TORCH_BENCH_FACTOR = 0.95
TORCH_BENCH_SOURCE = STAS00_BENCH
# Below ~1 GiB the busbw curve has not reached its plateau (8x H100 needs 4-16 GiB): do not fail on
# it.
NCCL_PLATEAU_BYTES = 1 << 30
# NCCL reaches ~80 % of the unidirectional link spec (stas00), used where no measured reference
# exists.
LINK_EFFICIENCY = 0.80
LINK_EFFICIENCY_SOURCE = f"stas00: expect ~80 % of the unidirectional spec ({STAS00_NETWORK})"
# A PCIe box without NVLink: ~10-25 GB/s for Gen4 x16 (an estimate: no clean public 8x L40S table),
# i.e. 40-100 % of the ~80 %-of-spec figure; below the range is a warning only.
PCIE_LOW_FRACTION = 0.40
PCIE_SOURCE = (
    f"PCIe Gen4 x16 31.5 GB/s spec, ~25 GB/s achieved ({STAS00_NETWORK}); estimate, calibrate on "
    "a good node"
)


class BusbwReference(NamedTuple):
    low: float  # GB/s, the reference the bands apply to
    high: float  # GB/s, top of the typical range
    source: str


# 8 GPUs in one node over NVLink/NVSwitch, NCCL defaults (NVLS on Hopper/Blackwell), large messages.
NVLINK_8GPU_BUSBW: dict[str, BusbwReference] = {
    "H100-SXM": BusbwReference(
        460.0,
        485.0,
        f"Azure ND H100 v5 threshold 460 GB/s @16 GiB ({AZURE_NHC}); "
        f"~480 with NVLS, sjeaugey in nccl-tests#212 ({NCCL_TESTS_212})",
    ),
    "H200-SXM": BusbwReference(
        460.0,
        485.0,
        f"stas00 8x H200 473-482 NVLS ({STAS00_NETWORK}); OCI H200 check "
        f"475.8; nccl-tests#212 ({NCCL_TESTS_212})",
    ),
    "A100-80GB-SXM": BusbwReference(
        230.0,
        240.0,
        f"Azure ND A100 v4 threshold 228 GB/s @8 GiB ({AZURE_NHC}); "
        f"stas00 235 = 80 % of 300 ({STAS00_NETWORK})",
    ),
    "A100-40GB-SXM": BusbwReference(
        230.0,
        240.0,
        f"OCI BM.GPU4.8 232.2 GB/s @10 GiB ({OCI_NCCL_A100}); Azure "
        f"ND A100 v4 threshold 228 ({AZURE_NHC})",
    ),
    "B200": BusbwReference(740.0, 845.0, f"stas00 8x B200 740-845 GB/s NVLS ({STAS00_NETWORK})"),
    "MI300X": BusbwReference(
        304.0, 330.0, f"ROCm acceptance: RCCL all_reduce >= 304 GB/s @8 GB ({ROCM_ACCEPTANCE})"
    ),
}

# --------------------------------------------------------------------------- compute (bf16 matmul)

# Maximum achievable matmul FLOPS (MAMF) per GPU, the reference for the matmul check (stas00 table).
MAMF_TFLOPS: dict[str, float] = {
    "H100-SXM": 794.5,
    "H200-SXM": 794.5,
    "A100-80GB-SXM": 271.0,
    "A100-40GB-SXM": 271.0,
    "A100-80GB-PCIE": 253.0,
    "B200": 1745.0,
}
MAMF_SOURCE = f"stas00 MAMF table ({STAS00_ACCELERATOR})"
# Where the table has no entry: 80 % of the catalog's dense peak (H100 MAMF is 80 % of 989).
MAMF_FRACTION_OF_PEAK = 0.80
MATMUL_BAND = Band(0.90, 0.80)
MATMUL_SOURCE = f"{MAMF_SOURCE}; gpu-fryer 10 % tolerance ({GPU_FRYER})"
# Spread: every GPU within 5 % of the node's best passes; 5-10 % warns; more than 10 % below the
# best fails.
SPREAD_BAND = Band(0.95, 0.90)
SPREAD_SOURCE = f"gpu-fryer --tflops-tolerance 10 % ({GPU_FRYER}); stas00 ({STAS00_ACCELERATOR})"

# --------------------------------------------------------------------------- health

ECC_SOURCE = f"Azure NHC check_gpu_ecc ({AZURE_NHC}); stas00 ({STAS00_DEBUG})"
SRAM_CORRECTABLE_WARN = 1_000
SRAM_CORRECTABLE_FAIL = 10_000  # Azure NHC limit
REMAP_UNCORRECTABLE_FAIL = 512  # Azure NHC: remapped uncorrectable rows > 512 fail
REMAP_SOURCE = f"Azure NHC ({AZURE_NHC}); stas00 ({STAS00_DEBUG})"
RETIRED_SOURCE = f"NVIDIA dynamic page retirement ({NVIDIA_DPR}); Azure NHC ({AZURE_NHC})"
XID_SOURCE = f"NVIDIA Xid catalog ({XID_CATALOG}); Azure NHC ({AZURE_XID}); Imbue ({IMBUE_HEALTH})"
THROTTLE_SOURCE = f"Azure NHC clock throttling check ({AZURE_THROTTLE})"
# Clock-event reasons that are fine under load, that warn, and that fail during a burn.
BENIGN_CLOCK_REASONS = frozenset({"gpu_idle", "sw_power_cap"})
HW_CLOCK_REASONS = frozenset({"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"})
PCIE_SOURCE_LINK = f"Azure NHC, Imbue ({IMBUE_HEALTH}); stas00 dmesg 'limited by' ({STAS00_DEBUG})"
NVLINK_SOURCE = (
    f"Azure NHC ({AZURE_NHC}); Imbue ({IMBUE_HEALTH}); stas00 nvlink -s/-e ({STAS00_DEBUG})"
)
DCGM_DIAG = "https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html"
PERSISTENCE_SOURCE = f"DCGM diag level 1 Persistence Mode ({DCGM_DIAG})"
ECC_MODE_SOURCE = f"Imbue NvidiaSmiHealthCheck ({IMBUE_HEALTH})"
FABRIC_SOURCE = f"nvidia-smi -q Fabric State/Status; Imbue fabric manager check ({IMBUE_HEALTH})"
RESET_SOURCE = f"nvidia-smi -q GPU Reset Status ({NVIDIA_SMI_MAN})"
TOPOLOGY_SOURCE = f"Azure NHC check_hw_topology ({AZURE_NHC})"
IB_SOURCE = f"Azure NHC check_hw_ib ({AZURE_NHC}); gpud infiniband component"
INVENTORY_SOURCE = (
    f"stas00 GPU-count check ({STAS00_DEBUG}); Azure NHC check_gpu_count ({AZURE_NHC})"
)
MIG_SOURCE = f"nvidia-smi -q MIG Mode / memory total ({NVIDIA_SMI_MAN})"
# A whole card reports at least this share of the catalog's memory (an H100 80GB reports 81559 MiB).
WHOLE_CARD_MEMORY_FRACTION = 0.90
# Datacenter GPUs where ECC off is a misconfiguration, matched on the catalog id.
DATACENTER_ECC_PREFIXES = ("H100", "H200", "B200", "A100", "V100", "MI300", "MI250")

# --------------------------------------------------------------------------- stability burn

TEMP_PASS_C = 80.0  # stas00: < 80 °C is good, throttling starts ~84-90 °C
TEMP_FAIL_C = 85.0
TEMP_SOURCE = f"stas00 cooling ({STAS00_ACCELERATOR})"
SM_CLOCK_BAND = Band(0.95, 0.90)  # fraction of clocks.max.sm, median under load
H100_BURN_CAPTURE = (
    "https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/e656cd81a180e7e0e7862b53c9acd4c2fb0f590b/"
    "internal/captures/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
)
SM_CLOCK_SOURCE = (
    f"H100 under gpu-burn held 1980 of 1980 MHz ({H100_BURN_CAPTURE}); gpu-fryer ({GPU_FRYER})"
)
DRIFT_PASS = 0.05  # throughput drop first vs last minute
DRIFT_FAIL = 0.10
DRIFT_SOURCE = f"gpu-fryer ({GPU_FRYER}); stas00 ({STAS00_ACCELERATOR})"
LOAD_UTIL_PCT = 90.0  # samples at or above this utilisation count as 'under load'

# --------------------------------------------------------------------------- storage

LOCAL_SEQ_READ_BYTES_PER_S = 2e9  # local NVMe, per PCIe Gen4 drive
SEQ_READ_BAND = Band(1.0, 0.70)  # of the reference or of the job's need
STORAGE_SOURCE = f"stas00 storage ({STAS00_STORAGE})"
P99_PASS_MS = 2.0  # network FS < 2 ms (local NVMe is < 0.2 ms); 2-10 ms warns; > 10 ms fails
P99_FAIL_MS = 10.0
# 4 KiB random reads at queue depth 32: the slowest storage tier with a published IOPS figure is a
# network block volume at its baseline, EBS gp3's 3,000 IOPS (resources/catalog/storage_tiers.json);
# a tenth of it fails.
RAND_IOPS_PASS = 3000.0
RAND_IOPS_FAIL = 300.0
RAND_IOPS_SOURCE = (
    "EBS gp3 baseline (https://docs.amazonaws.cn/en_us/ebs/latest/userguide/ebs-optimization.md)"
)
SMALL_FILE_PASS_MS = 0.5  # per small-file operation (open on local NVMe: 11 µs; on Lustre: 2.3 ms)
SMALL_FILE_FAIL_MS = 3.0
CAPACITY_WARN_USED = 0.80  # stas00: only ~80 % of a distributed FS is reliable
CAPACITY_FAIL_USED = 0.90  # GCP Filestore documents 89 %
CAPACITY_SOURCE = f"stas00 ({STAS00_STORAGE}); GCP Filestore ({GCP_FILESTORE})"
NETWORK_FILESYSTEMS = (
    "nfs",
    "lustre",
    "cifs",
    "smb",
    "ceph",
    "gluster",
    "gpfs",
    "beegfs",
    "weka",
    "juicefs",
    "9p",
    "panfs",
    "fuse.sshfs",
)
OBJECT_FILESYSTEMS = ("s3", "gcsfuse", "goofys", "mountpoint", "rclone", "blobfuse", "ossfs", "r2")

# --------------------------------------------------------------------------- distributed

DIST_SOURCE = f"stas00 torch-distributed-gpu-test.py ({STAS00_DIST_TEST})"
BAD_SOCKET_IFACES = ("lo", "docker", "virbr", "veth", "mlx5_bond")
IFACE_SOURCE = f"stas00 network debug ({STAS00_NETWORK_DEBUG})"

# --------------------------------------------------------------------------- cluster (several
# nodes)

# Clocks: a chosen tolerance. Above 1 s the nodes' logs and traces no longer line up event by event;
# at MIT Kerberos' default clockskew of 300 s tickets between the nodes start to be refused (and TLS
# validity windows are not far off), so a cluster that far apart is not one to train on.
KRB5_CONF = "https://web.mit.edu/kerberos/krb5-latest/doc/admin/conf_files/krb5_conf.html"
CLOCK_WARN_S = 1.0
CLOCK_FAIL_S = 300.0
CLOCK_SOURCE = (
    f"chosen tolerance: 1 s for log correlation; 300 s is Kerberos' default clockskew ({KRB5_CONF})"
)
# Every node must run the same stack: NCCL refuses or misbehaves across versions, torch elastic
# ranks must agree.
AGREEMENT_SOURCE = (
    f"Azure NHC checks every node against one expected driver/CUDA/NCCL set ({AZURE_NHC}); "
    f"stas00 network debug ({STAS00_NETWORK_DEBUG})"
)
# GPUDirect RDMA wants the GPU and the HCA under the same PCIe root complex; NODE/SYS cross the CPU.
GPUDIRECT_RDMA_MANUAL = (
    "https://docs.nvidia.com/networking/display/GPUDirectRDMAv18/"
    "System+Requirements+and+Recommendations"
)
AFFINITY_SOURCE = (
    "NVIDIA GPUDirect RDMA manual: HCA and GPU on the same PCIe root complex "
    f"({GPUDIRECT_RDMA_MANUAL})"
)
CLOSE_NIC_LINKS = frozenset({"PIX", "PXB", "PHB"})
# ib_write_bw between two nodes: a healthy link tops out near line rate (96.6 of 100 Gb/s on EDR,
# NVIDIA forum); 90 % leaves room for run-to-run spread, below 75 % the link or its configuration is
# at fault (chosen band).
NVIDIA_FORUM_EDR = (
    "https://forums.developer.nvidia.com/t/theortical-bandwidth-and-latency-of-nic/273376"
)
IB_WRITE_BW_BAND = Band(0.90, 0.75)
IB_WRITE_BW_SOURCE = (
    f"ib_write_bw reaches 96.6 of 100 Gb/s on EDR ({NVIDIA_FORUM_EDR}); 90/75 % is a chosen band"
)
TORCHRUN_DOCS = "https://pytorch.org/docs/stable/elastic/run.html"
RENDEZVOUS_SOURCE = (
    f"torchrun --rdzv-backend c10d: every node connects to the endpoint's port ({TORCHRUN_DOCS})"
)
DCGM_SOURCE = f"dcgmi diag result table ({DCGM_DIAG})"
# The seed's verdict for nodes that only have TCP between them; ~4-6 GB/s over 100G TCP (nccl#450,
# nccl#209).
TCP_ONLY_VERDICT = (
    "nodes talk over plain TCP sockets: multi-node training will be communication-bound"
)
