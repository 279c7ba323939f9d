"""The Kubernetes core objects a training job's pods need, and the pod settings every operator's
object shares.

``core.launch.kubernetes`` wraps these in the operators' jobs (TrainJob, JobSet, PyTorchJob); what
is here is what training pods need and users forget:

- **/dev/shm** as a memory-backed ``emptyDir``: a container's own /dev/shm is 64 MiB (the container
  runtime's default), too little for NCCL's shared-memory transport between the GPUs of a node and
  for the data loaders' worker processes, which hand batches over in shared memory. The size is
  `shm_bytes`.
- **the GPU product** as a node selector: ``nvidia.com/gpu.product`` is the label NVIDIA's GPU
  feature discovery puts on each GPU node (the GPU operator runs it), the driver's product name made
  a label value by ``sanitise`` (NVIDIA/k8s-device-plugin v0.20.0 internal/lm/resource.go:
  characters other than letters, digits, ``-_.`` and space dropped, runs of spaces made one ``-``).
  Without it a pod asking for ``nvidia.com/gpu`` lands on whichever GPU node has room, and the
  plan's memory and time were for one GPU.
- **tolerations** for the ``nvidia.com/gpu`` ``NoSchedule`` taint that managed clusters put on GPU
  nodes (GKE and AKS GPU node pools, EKS's GPU AMIs with the NVIDIA device plugin's recommended
  taint).
- **RDMA** where the fabric is InfiniBand or RoCE: the HCAs reach a pod only as a device-plugin
  resource (``rdma/rdma_shared_device_a``, the NVIDIA Network Operator's shared-device plugin
  default; the cluster's admins name theirs) and NCCL pins memory for GPUDirect RDMA, which needs
  ``IPC_LOCK``.
- a **PersistentVolumeClaim** for checkpoints, sized by `checkpoint_claim_bytes`, and a
  **ConfigMap** with the run's settings (the same variables torchrun.sh exports).

Every name is `object_name`: ``tuneplan-`` and the plan's slug (``plan_view.slug``: lowercase
letters, digits and dashes), a DNS-1035 label, as TrainJob's schema demands of its name. The plan's
own name appears only as an annotation value and in the header comments (``emit``).
"""

from __future__ import annotations

import math
import re
from typing import Any

from core.catalog.records import Interconnect
from core.launch.emit import one_line
from core.launch.plan_view import LaunchPlan
from core.launch.skypilot import cloud
from core.launch.slurm import save_grace_s
from core.launch.torchrun import network

GIB = 1024**3
CHECKPOINT_MOUNT = "/checkpoints"
TRAIN_SCRIPT = "train.py"
# The image the pods run until the user names theirs: PyTorch's own CUDA runtime image, the one
# Kubeflow Trainer v2.3.0's torch-distributed runtime runs
# (charts/kubeflow-trainer/files/runtimes/torch-distributed.yaml). It holds torch and torchrun, not
# the training script: README "Launch files" says to build on it.
IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
GPU_RESOURCE = "nvidia.com/gpu"
PRODUCT_LABEL = "nvidia.com/gpu.product"
RDMA_RESOURCE = "rdma/rdma_shared_device_a"
PLAN_ANNOTATION = "tuneplan.io/plan"
# Room for the suffixes JobSet adds to pod names (``-node-0-12``) inside a 63-character DNS label.
NAME_SLUG_MAX = 30

# Catalog GPU id -> the product name the NVIDIA driver reports (``nvidia-smi --query-gpu=name``,
# NVML's nvmlDeviceGetName), which GPU feature discovery turns into the node label. Names are as
# recorded in this project's probe fixtures where one holds the part (tests/fixtures/probes: H100
# 80GB HBM3, A100-SXM4-40GB, A100-SXM4-80GB, L40S, L4; tests/fixtures/planner measured runs: H200,
# A10G); the others are the driver's names as NVIDIA's product pages and the GPU operator's
# documentation print them. A GPU not listed gets no selector and a header line saying so.
DRIVER_NAMES = {
    "H100-SXM": "NVIDIA H100 80GB HBM3",
    "H100-PCIE": "NVIDIA H100 PCIe",
    "H100-NVL": "NVIDIA H100 NVL",
    "H200-SXM": "NVIDIA H200",
    "B200": "NVIDIA B200",
    "A100-80GB-SXM": "NVIDIA A100-SXM4-80GB",
    "A100-40GB-SXM": "NVIDIA A100-SXM4-40GB",
    "A100-80GB-PCIE": "NVIDIA A100 80GB PCIe",
    "L40S": "NVIDIA L40S",
    "L40": "NVIDIA L40",
    "L4": "NVIDIA L4",
    "A10G": "NVIDIA A10G",
    "A10": "NVIDIA A10",
    "A40": "NVIDIA A40",
    "T4": "Tesla T4",
}

# /dev/shm: NCCL's troubleshooting guide
# (docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html, "Docker") asks for
# --shm-size=1g for its shared-memory transport; each GPU's data loader then holds LOADER_WORKERS ×
# LOADER_PREFETCH batches in shared memory (torch.utils.data.DataLoader's prefetch_factor default is
# 2; 4 workers per GPU is a common setting, not a plan figure), each batch the micro-batch's input
# ids, labels and attention mask as int64 — and at least LOADER_FLOOR_BYTES per GPU, since a batch
# with images or unpadded text is larger than its token ids.
NCCL_SHM_BYTES = GIB
LOADER_WORKERS = 4
LOADER_PREFETCH = 2
BATCH_TENSORS = 3
LOADER_FLOOR_BYTES = GIB // 2

# Spot capacity's node labels and taints where a managed Kubernetes documents them: GKE Spot VMs
# carry cloud.google.com/gke-spot=true (and a NoSchedule taint of the same key in node pools that
# set it); EKS managed node groups label their nodes eks.amazonaws.com/capacityType=SPOT.
SPOT_SELECTORS = {
    "gcp": {"cloud.google.com/gke-spot": "true"},
    "aws": {"eks.amazonaws.com/capacityType": "SPOT"},
}
SPOT_TOLERATIONS = {
    "gcp": [
        {
            "key": "cloud.google.com/gke-spot",
            "operator": "Equal",
            "value": "true",
            "effect": "NoSchedule",
        }
    ]
}


def sanitise(product: str) -> str:
    """GPU feature discovery's label value for a driver product name (see the module docstring)."""
    return "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", product).split())


def gpu_product(p: LaunchPlan) -> str | None:
    """The ``nvidia.com/gpu.product`` value of the plan's GPU, None where its driver name is not
    known here."""
    name = DRIVER_NAMES.get(p.result.hardware.gpu)
    return sanitise(name) if name else None


def object_name(p: LaunchPlan, suffix: str = "") -> str:
    """``tuneplan-<slug>[-suffix]``: a DNS-1035 label (a letter first, at most 63 characters)."""
    base = f"tuneplan-{p.name_slug[:NAME_SLUG_MAX].strip('-')}".rstrip("-")
    return f"{base}-{suffix}" if suffix else base


def rdma(p: LaunchPlan) -> bool:
    """The pods need the HCAs: several nodes meeting over InfiniBand or RoCE."""
    return p.nodes > 1 and network(p) in (Interconnect.infiniband, Interconnect.roce)


def provider(p: LaunchPlan) -> str:
    """The plan's priced cloud in SkyPilot's spelling (aws, gcp, ...), empty where it is none of
    them."""
    return cloud(p) or ""


def shm_bytes(p: LaunchPlan) -> int:
    """The /dev/shm size limit: NCCL's 1 GiB and each GPU's data-loader batches, rounded up to whole
    GiB."""
    batch = p.micro_batch * p.seq_len * BATCH_TENSORS * 8
    loaders = p.gpus_per_node * max(LOADER_FLOOR_BYTES, LOADER_WORKERS * LOADER_PREFETCH * batch)
    return math.ceil((NCCL_SHM_BYTES + loaders) / GIB) * GIB


def checkpoint_claim_bytes(p: LaunchPlan) -> int:
    """The claim's size: the plan's checkpoint size × (kept + 1), in whole GiB. The one more is the
    checkpoint being written while the kept ones are still there (a trainer deletes the oldest only
    after a save)."""
    return math.ceil(p.result.checkpoint.size_bytes * (p.checkpoints_kept + 1) / GIB) * GIB


def quantity(size: int) -> str:
    """Bytes as a Kubernetes quantity in GiB (``12Gi``)."""
    return f"{size // GIB}Gi"


def settings(p: LaunchPlan) -> dict[str, str]:
    """The run's environment, as torchrun.sh exports it: checkpoints (in the claim) and the
    network's NCCL settings that are not only hints."""
    env = {**p.checkpoint_env(CHECKPOINT_MOUNT), "TRAIN_SCRIPT": TRAIN_SCRIPT}
    if p.nodes > 1 and network(p) is Interconnect.efa:
        env["FI_PROVIDER"] = "efa"
    return env


def labels(p: LaunchPlan) -> dict[str, str]:
    """Labels of the job and its pods: what tuneplan wrote, and that a spot plan may be
    preempted."""
    out = {"app.kubernetes.io/name": object_name(p), "app.kubernetes.io/managed-by": "tuneplan"}
    if p.spot:
        out["tuneplan.io/preemptible"] = "true"
    return out


def job_labels(p: LaunchPlan) -> dict[str, str]:
    """The operator object's labels: `labels`, and Kueue's queue where the request names one."""
    queue = p.result.request.launch.kueue_queue if p.result.request.launch else None
    return {**labels(p), **({"kueue.x-k8s.io/queue-name": queue} if queue else {})}


def queued(p: LaunchPlan) -> bool:
    """Kueue admits a job by unsuspending it: a queued job is created suspended."""
    return "kueue.x-k8s.io/queue-name" in job_labels(p)


def plan_annotations(p: LaunchPlan) -> dict[str, str]:
    """The plan's name (one line, as a value) and, for a spot plan, its checkpoint interval and
    resume."""
    out = {PLAN_ANNOTATION: one_line(p.name)}
    if p.spot:
        out |= {
            "tuneplan.io/checkpoint-every-steps": str(p.save_steps),
            "tuneplan.io/checkpoint-interval-minutes": f"{p.result.checkpoint.interval_minutes:.0f}",  # noqa: E501
            "tuneplan.io/resume": "from the newest checkpoint in " + CHECKPOINT_MOUNT,
        }
    return out


def metadata(p: LaunchPlan, name: str, job: bool = False) -> dict[str, Any]:
    return {
        "name": name,
        "labels": job_labels(p) if job else labels(p),
        "annotations": plan_annotations(p),
    }


def gpu_limits(p: LaunchPlan) -> dict[str, Any]:
    """The container's limits: the node's GPUs (extended resources: requests default to limits), and
    one RDMA device share where the fabric is InfiniBand or RoCE."""
    limits: dict[str, Any] = {GPU_RESOURCE: p.gpus_per_node}
    if rdma(p):
        limits[RDMA_RESOURCE] = 1
    return limits


def node_selector(p: LaunchPlan) -> dict[str, str]:
    product = gpu_product(p)
    out = {PRODUCT_LABEL: product} if product else {}
    if p.spot:
        out |= SPOT_SELECTORS.get(provider(p), {})
    return out


def tolerations(p: LaunchPlan) -> list[dict[str, str]]:
    out = [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    return out + (SPOT_TOLERATIONS.get(provider(p), []) if p.spot else [])


def volumes(p: LaunchPlan) -> list[dict[str, Any]]:
    return [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": quantity(shm_bytes(p))}},
        {
            "name": "checkpoints",
            "persistentVolumeClaim": {"claimName": object_name(p, "checkpoints")},
        },
    ]


def volume_mounts() -> list[dict[str, str]]:
    return [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "checkpoints", "mountPath": CHECKPOINT_MOUNT},
    ]


def security_context(p: LaunchPlan) -> dict[str, Any] | None:
    """``IPC_LOCK`` for RDMA: NCCL registers (pins) GPU and host buffers with the HCA."""
    return {"capabilities": {"add": ["IPC_LOCK"]}} if rdma(p) else None


def pod_spec_extras(p: LaunchPlan) -> dict[str, Any]:
    """What every operator's pod spec carries besides its containers."""
    return {
        "nodeSelector": node_selector(p),
        "tolerations": tolerations(p),
        "volumes": volumes(p),
        "terminationGracePeriodSeconds": save_grace_s(p),
    }


def container(
    p: LaunchPlan, name: str, args: list[str], env: list[dict[str, Any]]
) -> dict[str, Any]:
    """The training container: torchrun with `args`, the settings ConfigMap as its environment, the
    GPUs."""
    out: dict[str, Any] = {
        "name": name,
        "image": IMAGE,
        "command": ["torchrun"],
        "args": args,
        "envFrom": [{"configMapRef": {"name": object_name(p, "settings")}}],
        "resources": {"limits": gpu_limits(p)},
        "volumeMounts": volume_mounts(),
    }
    if env:
        out["env"] = env
    context = security_context(p)
    if context:
        out["securityContext"] = context
    return out


def config_map(p: LaunchPlan) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(p, object_name(p, "settings")),
        "data": settings(p),
    }


def checkpoint_claim(p: LaunchPlan) -> dict[str, Any]:
    """The checkpoints' claim: every node's pod mounts it, so a multi-node plan needs ReadWriteMany
    storage. No storageClassName: the cluster's default class, unless the user names one (README
    "Launch files")."""
    mode = "ReadWriteMany" if p.nodes > 1 else "ReadWriteOnce"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata(p, object_name(p, "checkpoints")),
        "spec": {
            "accessModes": [mode],
            "resources": {"requests": {"storage": quantity(checkpoint_claim_bytes(p))}},
        },
    }


def headless_service(p: LaunchPlan, selector: dict[str, str], port: int) -> dict[str, Any]:
    """The job's own service: headless, so each pod's hostname resolves to it (the rendezvous host's
    too), and published before the pods are ready, since the rendezvous is what makes them ready."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(p, object_name(p)),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": selector,
            "ports": [{"name": "rendezvous", "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }
