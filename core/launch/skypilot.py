"""`skypilot`: a SkyPilot task YAML (``sky launch`` / ``sky jobs launch``) for the plan.

Keys are SkyPilot's task schema (sky/utils/schemas.py, skypilot 0.14.1): ``num_nodes``, ``resources``
(``accelerators``, ``use_spot``, ``job_recovery``, ``infra``), ``file_mounts`` with a bucket in
``MOUNT_CACHED`` mode (SkyPilot's mode for writing checkpoints: writes go to local disk and upload in the
background), ``envs`` and ``run``. The run command uses the variables SkyPilot sets on each node
(``SKYPILOT_NODE_RANK``, ``SKYPILOT_NODE_IPS``, ``SKYPILOT_NUM_NODES``, ``SKYPILOT_NUM_GPUS_PER_NODE``,
sky/skylet/constants.py). A spot plan runs as a managed job that recovers from preemption
(``job_recovery: EAGER_NEXT_REGION``, the documented default strategy) and resumes from the bucket.
"""

from __future__ import annotations

from typing import Any

from core.launch import emit
from core.launch.plan_view import LaunchError, LaunchPlan

FILE = "sky_task.yaml"
MOUNT = "/checkpoints"

# Catalog GPU id -> SkyPilot accelerator name, as SkyPilot's catalogs spell them (skypilot 0.14.1
# sky/catalog/data_fetchers/fetch_aws.py, fetch_gcp.py, fetch_runpod.py, fetch_lambda_cloud.py).
ACCELERATORS = {
    "H200-SXM": "H200",
    "H100-SXM": "H100",
    "H100-PCIE": "H100",
    "H100-NVL": "H100-NVL",
    "B200": "B200",
    "A100-80GB-SXM": "A100-80GB",
    "A100-80GB-PCIE": "A100-80GB",
    "A100-40GB-SXM": "A100",
    "L40S": "L40S",
    "L40": "L40",
    "L4": "L4",
    "A10G": "A10G",
    "A10": "A10",
    "T4": "T4",
    "V100-32GB-SXM2": "V100-32GB",
    "V100-16GB": "V100",
    "RTX-4090": "RTX4090",
    "RTX-6000-ADA": "RTX6000-Ada",
    "MI300X": "MI300X",
}
# SkyPilot `infra` names of the catalog's providers (sky/utils/schemas.py _get_infra_pattern: the cloud name).
INFRA = {"aws": "aws", "gcp": "gcp", "azure": "azure", "lambda": "lambda", "runpod": "runpod",
         "coreweave": "coreweave", "nebius": "nebius", "oci": "oci", "fluidstack": "fluidstack",
         "paperspace": "paperspace", "vast": "vast", "cudo": "cudo", "do": "do"}
STORES = {"aws": "s3", "gcp": "gcs", "azure": "azure", "nebius": "nebius", "coreweave": "coreweave"}


def accelerator(p: LaunchPlan) -> str:
    gpu = p.result.hardware.gpu
    name = ACCELERATORS.get(gpu)
    if name is None:
        raise LaunchError(
            f"hardware.gpu {gpu} has no SkyPilot accelerator name; use one of {', '.join(sorted(ACCELERATORS))}"
        )
    return name


def run_script(p: LaunchPlan) -> str:
    return "\n".join([
        "set -euo pipefail",
        'MASTER_ADDR="$(echo "$SKYPILOT_NODE_IPS" | head -n 1)"',
        'torchrun --nnodes="$SKYPILOT_NUM_NODES" --nproc-per-node="$SKYPILOT_NUM_GPUS_PER_NODE" '
        '--node-rank="$SKYPILOT_NODE_RANK" --master-addr="$MASTER_ADDR" --master-port=29500 '
        '"$TRAIN_SCRIPT"',
    ]) + "\n"


def config(p: LaunchPlan) -> dict[str, Any]:
    provider = (p.result.request.pricing.provider or "").lower() or None
    resources: dict[str, Any] = {"accelerators": {accelerator(p): p.gpus_per_node}}
    if provider in INFRA:
        resources["infra"] = INFRA[provider]
    if p.spot:
        resources["use_spot"] = True
        resources["job_recovery"] = {"strategy": "EAGER_NEXT_REGION"}
    bucket: dict[str, Any] = {"name": f"tuneplan-{p.name_slug}-checkpoints", "mode": "MOUNT_CACHED"}
    if provider in STORES:
        bucket["store"] = STORES[provider]
    return {
        "name": f"tuneplan-{p.name_slug}",
        "num_nodes": p.nodes,
        "resources": resources,
        "file_mounts": {MOUNT: bucket},
        "envs": {"CHECKPOINT_DIR": MOUNT, "TRAIN_SCRIPT": "train.py"},
        "workdir": ".",
        "run": run_script(p),
    }


def files(p: LaunchPlan) -> dict[str, str]:
    launch = "sky jobs launch sky_task.yaml" if p.spot else "sky launch -c tuneplan sky_task.yaml"
    header = [*p.header_lines(), "", f"run: {launch}  (checkpoints go to the bucket mounted at {MOUNT})"]
    return {FILE: emit.yaml_document(config(p), header)}
