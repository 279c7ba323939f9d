"""`skypilot`: a SkyPilot task YAML (``sky launch`` / ``sky jobs launch``) for the plan.

Keys are SkyPilot's task schema (sky/utils/schemas.py, skypilot 0.14.1): ``num_nodes``,
``resources`` (``accelerators``, ``infra``, ``instance_type``, ``network_tier``, ``use_spot``,
``job_recovery``), ``file_mounts`` with a bucket in ``MOUNT_CACHED`` mode (SkyPilot's mode for
writing checkpoints: writes go to local disk and upload in the background), ``envs`` and ``run``.
The run command uses the variables SkyPilot sets on each node (``SKYPILOT_NODE_RANK``,
``SKYPILOT_NODE_IPS``, ``SKYPILOT_NUM_NODES``, sky/skylet/constants.py).

Why the instance type is pinned: ``accelerators: {H100: 1}`` alone lets SkyPilot's optimizer pick
the cheapest instance carrying that accelerator name, and SkyPilot's catalogs name SXM and PCIe
H100s alike (Lambda's ``gpu_1x_h100_pcie`` and ``gpu_1x_h100_sxm5`` are both ``H100``), so the run
would land on a box the plan did not cost. Where the plan priced a real instance of a cloud SkyPilot
drives, the file names that instance and the cloud (``infra``; SkyPilot refuses ``instance_type``
without one). The region the plan priced is pinned too (``infra: aws/us-east-1``): the same instance
costs differently by region, and the plan names the one it costed. Not for a spot plan, whose
managed job must be free to move when preempted (``EAGER_NEXT_REGION``; the header names the region
priced), nor where the price holds in every region (``any``).

Why ``network_tier`` only on some clouds: ``best`` asks for the cloud's fast interconnect (EFA,
GPUDirect, InfiniBand), which a multi-node plan's all-reduce assumes, but SkyPilot 0.14.1 drops
every cloud listing ``CUSTOM_NETWORK_TIER`` as unsupported (Lambda, RunPod, Mithril, Azure, ...;
sky/clouds/*.py) from the search, so asking for it there would make the task unlaunchable.

A spot plan runs as a managed job that recovers from preemption (``job_recovery``) and resumes from
the checkpoints in the bucket: the training script reads CHECKPOINT_DIR, SAVE_STEPS,
SAVE_TOTAL_LIMIT and RESUME, as it does under torchrun.sh and train.sbatch.
"""

from __future__ import annotations

from typing import Any

from core.catalog.lookup import Catalog
from core.catalog.overrides import load_catalog
from core.catalog.records import Price
from core.launch import emit
from core.launch.plan_view import LaunchError, LaunchPlan

FILE = "sky_task.yaml"
MOUNT = "/checkpoints"
# a convention, not a plan figure: user-code failures retried before the job fails
MAX_RESTARTS_ON_ERRORS = 3

# Catalog GPU id -> SkyPilot accelerator name, spelled as SkyPilot's common accelerator catalog
# spells it (skypilot-org/skypilot-catalog catalogs/v8/common/accelerators.csv, the file
# sky/utils/accelerator_registry.py canonicalises names against; a copy is in
# tests/fixtures/launch/skypilot/catalogs/). SkyPilot matches names case-insensitively, so ``h100``
# works too, but the file writes the catalog's own spelling. SXM and PCIe parts share a name on most
# clouds.
ACCELERATORS = {
    "H200-SXM": "H200",
    "H100-SXM": "H100",
    "H100-PCIE": "H100",
    "H100-NVL": "H100-NVL",
    "GH200": "GH200",
    "B200": "B200",
    "A100-80GB-SXM": "A100-80GB",
    "A100-80GB-PCIE": "A100-80GB",
    "A100-40GB-SXM": "A100",
    "A40": "A40",
    "L40S": "L40S",
    "L40": "L40",
    "L4": "L4",
    "A10G": "A10G",
    "A10": "A10",
    "T4": "T4",
    "V100-32GB-SXM2": "V100-32GB",
    "V100-16GB": "V100",
    "RTX-4090": "RTX4090",
    "RTX-3090": "RTX3090",
    "RTX-5090": "RTX5090",
    "RTX-6000-ADA": "RTX6000-Ada",
    "MI300X": "MI300X",
}
# Where one cloud's catalog spells a part differently (accelerators.csv: H100-SXM, A100-80GB-SXM and
# H200-SXM are RunPod's names; its H100 is the PCIe card).
CLOUD_ACCELERATORS = {
    "runpod": {"H100-SXM": "H100-SXM", "A100-80GB-SXM": "A100-80GB-SXM", "H200-SXM": "H200-SXM"},
}
# SkyPilot `infra` names of the catalog's providers (sky/utils/schemas.py _get_infra_pattern: the
# cloud name).
INFRA = {
    "aws": "aws",
    "gcp": "gcp",
    "azure": "azure",
    "lambda": "lambda",
    "runpod": "runpod",
    "nebius": "nebius",
    "mithril": "mithril",
    "paperspace": "paperspace",
    "vastai": "vast",
}
STORES = {"aws": "s3", "gcp": "gcs", "azure": "azure", "nebius": "nebius"}
# Clouds that take `network_tier: best` (no CUSTOM_NETWORK_TIER entry in their unsupported features,
# skypilot 0.14.1 sky/clouds/aws.py, gcp.py; Nebius only for 8 × H100/H200/B200/B300,
# sky/clouds/nebius.py).
NETWORK_TIER = {"aws", "gcp"}
NEBIUS_FABRIC = {"H100", "H200", "B200", "B300"}

# tuneplan price row (provider, instance) -> SkyPilot instance type, for rows that are a real
# instance of that cloud in SkyPilot's catalogs. AWS and GCP rows were read from SkyPilot's catalog
# (prices.json cites skypilot-catalog catalogs/v8/{aws,gcp}/vms.csv), so their names are SkyPilot's;
# Lambda's price rows carry Lambda's marketing names, mapped here to catalogs/v8/lambda/vms.csv
# instance types; Azure's are VM sizes; Mithril's come from SkyPilot's Mithril fetcher (skypilot PR
# #9156). RunPod's are built below.
INSTANCES: dict[tuple[str, str], str] = {
    **{
        ("aws", i): i
        for i in (
            "g5.48xlarge",
            "g5.4xlarge",
            "g6.4xlarge",
            "g6e.xlarge",
            "p3.8xlarge",
            "p3dn.24xlarge",
            "p4d.24xlarge",
            "p4de.24xlarge",
            "p5.48xlarge",
            "p5.4xlarge",
            "p5e.48xlarge",
            "p5en.48xlarge",
            "p6-b200.48xlarge",
        )
    },
    ("gcp", "a2-highgpu-8g"): "a2-highgpu-8g",
    ("gcp", "a3-highgpu-8g"): "a3-highgpu-8g",
    **{
        ("azure", i): i
        for i in (
            "Standard_NC24ads_A100_v4",
            "Standard_NC48ads_A100_v4",
            "Standard_NC96ads_A100_v4",
            "Standard_ND96asr_A100_v4",
            "Standard_ND96isr_H100_v5",
            "Standard_NC40ads_H100_v5",
            "Standard_NC80adis_H100_v5",
        )
    },
    ("lambda", "1x NVIDIA H100 SXM"): "gpu_1x_h100_sxm5",
    ("lambda", "8x NVIDIA H100 SXM"): "gpu_8x_h100_sxm5",
    ("lambda", "1x NVIDIA H100 PCIe"): "gpu_1x_h100_pcie",
    ("lambda", "8x NVIDIA A100 SXM 80 GB"): "gpu_8x_a100_80gb_sxm4",
    ("lambda", "1x NVIDIA B200 SXM6"): "gpu_1x_b200_sxm6",
    ("lambda", "8x NVIDIA B200 SXM6"): "gpu_8x_b200_sxm6",
    ("lambda", "1x NVIDIA GH200"): "gpu_1x_gh200",
    ("lambda", "8x NVIDIA Tesla V100 (SkyPilot: gpu_8x_v100)"): "gpu_8x_v100",
    ("lambda", "gpu_1x_a6000"): "gpu_1x_a6000",
    ("mithril", "h100-80gb.sxm.8x"): "h100-80gb.sxm.8x",
}
# RunPod's Secure Cloud pods are ``{count}x_{accelerator}_SECURE``
# (sky/catalog/data_fetchers/fetch_runpod.py).
RUNPOD_SECURE = " Secure Cloud"


def _cloud_accelerator(gpu: str, cloud: str | None) -> str:
    name = CLOUD_ACCELERATORS.get(cloud or "", {}).get(gpu) or ACCELERATORS.get(gpu)
    if name is None:
        raise LaunchError(
            f"hardware.gpu {gpu} has no SkyPilot accelerator name; use one of "
            f"{', '.join(sorted(ACCELERATORS))}"
        )
    return name


def accelerator(p: LaunchPlan) -> str:
    """The accelerator name the file writes, in the spelling of the cloud it runs on."""
    return _cloud_accelerator(p.result.hardware.gpu, cloud(p))


def _provider(p: LaunchPlan, catalog: Catalog) -> str | None:
    """The catalog slug of the provider the plan was priced at (else the one the request names)."""
    for name in (p.result.cost.provider, p.result.request.pricing.provider):
        if name:
            try:
                return catalog.provider_id(name)
            except ValueError:
                continue
    return None


def cloud(p: LaunchPlan, catalog: Catalog | None = None) -> str | None:
    """The SkyPilot cloud of the plan's priced provider, or None where SkyPilot has no such
    cloud."""
    return INFRA.get(_provider(p, catalog or load_catalog()) or "")


def priced_row(p: LaunchPlan, catalog: Catalog | None = None) -> Price | None:
    """The price row the plan's cost came from (provider, instance, GPU), if the catalog still has
    it."""
    c = catalog or load_catalog()
    provider, instance = _provider(p, c), p.result.cost.instance
    if provider is None or instance is None:
        return None
    try:
        rows = c.prices_for(p.result.hardware.gpu, provider)
    except ValueError:
        return None
    return next((r for r in rows if r.instance == instance), None)


def instance_type(p: LaunchPlan, catalog: Catalog | None = None) -> tuple[str, int] | None:
    """SkyPilot's name for the instance the plan priced and the GPUs it holds, where it is one of
    its clouds."""
    row = priced_row(p, catalog)
    if row is None or p.result.request.pricing.usd_per_gpu_hour is not None:
        return None  # no priced row, or the user's own price: nothing to pin
    billed = p.result.cost.billed_gpus_per_node or p.gpus_per_node
    if row.provider == "runpod" and row.instance.endswith(RUNPOD_SECURE):
        return f"{billed}x_{_cloud_accelerator(row.gpu, 'runpod')}_SECURE", billed
    name = INSTANCES.get((row.provider, row.instance))
    return (name, row.gpus_per_instance) if name else None


def pinned_region(p: LaunchPlan, catalog: Catalog | None = None) -> str | None:
    """The region of the priced row, to pin with the instance; None for a spot plan or a price for
    any region."""
    region = p.result.cost.region
    if p.spot or not region or region == "any" or priced_row(p, catalog) is None:
        return None
    return region


def network_tier(p: LaunchPlan, sky_cloud: str | None, gpus: int) -> str | None:
    """``best`` for a multi-node plan where the cloud offers it (see the module docstring), else
    None."""
    if p.nodes < 2:
        return None
    if sky_cloud is None or sky_cloud in NETWORK_TIER:
        return "best"
    if sky_cloud == "nebius" and gpus == 8 and accelerator(p) in NEBIUS_FABRIC:
        return "best"
    return None


def run_script(p: LaunchPlan) -> str:
    """torchrun on every node: tuneplan's own words and the plan's numbers, no user text."""
    return (
        "\n".join(
            [
                "set -euo pipefail",
                # sed, not head: under pipefail a writer killed by head's early exit (SIGPIPE) would
                # end the job.
                'MASTER_ADDR="$(echo "$SKYPILOT_NODE_IPS" | sed -n 1p)"',
                f'torchrun --nnodes="$SKYPILOT_NUM_NODES" --nproc-per-node={int(p.gpus_per_node)} '
                '--node-rank="$SKYPILOT_NODE_RANK" --master-addr="$MASTER_ADDR" '
                '--master-port=29500 "$TRAIN_SCRIPT"',
            ]
        )
        + "\n"
    )


def config(p: LaunchPlan, catalog: Catalog | None = None) -> dict[str, Any]:
    c = catalog or load_catalog()
    provider = _provider(p, c)
    sky_cloud = INFRA.get(provider or "")
    pinned = instance_type(p, c) if sky_cloud else None
    gpus = pinned[1] if pinned else p.gpus_per_node
    resources: dict[str, Any] = {
        "accelerators": {_cloud_accelerator(p.result.hardware.gpu, sky_cloud): gpus}
    }
    region = pinned_region(p, c) if pinned else None
    if sky_cloud:
        resources["infra"] = f"{sky_cloud}/{region}" if region else sky_cloud
    if pinned:
        resources["instance_type"] = pinned[0]
    tier = network_tier(p, sky_cloud, gpus)
    if tier:
        resources["network_tier"] = tier
    if p.spot:
        resources["use_spot"] = True
        resources["job_recovery"] = {
            "strategy": "EAGER_NEXT_REGION",
            "max_restarts_on_errors": MAX_RESTARTS_ON_ERRORS,
        }
    bucket: dict[str, Any] = {"name": f"tuneplan-{p.name_slug}-checkpoints", "mode": "MOUNT_CACHED"}
    if provider in STORES:
        bucket["store"] = STORES[provider]
    return {
        "name": f"tuneplan-{p.name_slug}",
        "num_nodes": p.nodes,
        "resources": resources,
        "file_mounts": {MOUNT: bucket},
        # as torchrun.sh and train.sbatch export
        "envs": {**p.checkpoint_env(MOUNT), "TRAIN_SCRIPT": "train.py"},
        "workdir": ".",
        "run": run_script(p),
    }


def files(p: LaunchPlan) -> dict[str, str]:
    catalog = load_catalog()
    cfg = config(p, catalog)
    res = cfg["resources"]
    launch = "sky jobs launch sky_task.yaml" if p.spot else "sky launch -c tuneplan sky_task.yaml"
    notes = [f"run: {launch}  (checkpoints go to the bucket mounted at {MOUNT})"]
    if "instance_type" in res:
        notes.append(
            f"instance_type {res['instance_type']} on {res['infra']} is the instance the plan "
            f"priced ({p.result.cost.instance}): pinned so SkyPilot does not pick another box "
            "with the same "
            "accelerator name (e.g. a PCIe part where the plan costed SXM)"
        )
        region = p.result.cost.region or "any"
        if p.spot and region != "any":
            notes.append(
                f"region: the plan priced {region}; not pinned, so a preempted job can move to "
                "another "
                "region (its spot price there may differ)"
            )
    else:
        notes.append(
            "no instance_type: the plan's price is not an instance SkyPilot knows, so SkyPilot "
            "picks "
            f"the cheapest instance with {next(iter(res['accelerators']))}; check it is the part "
            "planned"
        )
    if p.nodes > 1:
        notes.append(
            "network_tier best: the fast interconnect the multi-node all-reduce assumes"
            if "network_tier" in res
            else f"network: SkyPilot 0.14.1 has no network_tier on {res.get('infra')}; the "
            "instance's own "
            "interconnect is what the run gets"
        )
    notes.append(
        f"the training script saves every SAVE_STEPS={p.save_steps} steps to CHECKPOINT_DIR, keeps "
        f"SAVE_TOTAL_LIMIT={p.checkpoints_kept}, and resumes from the "
        "newest checkpoint there" + (" after a preemption (managed-job recovery)" if p.spot else "")
    )
    return {FILE: emit.yaml_document(cfg, [*p.header_lines(), "", *notes])}
