"""A named fabric is per instance, not per name (core/catalog/network.py:
NAMED_FABRIC_GBPS_PER_GPU).

Expected figures are the instance pages' NIC counts and speeds: AWS p4d (A100) 4 × 100 Gbit/s EFA
for 8 GPUs, p5 (H100) 3,200 Gbit/s for 8 GPUs; DGX A100: 8 × 200 Gbit/s HDR InfiniBand.
"""

from __future__ import annotations

import pytest

from core.catalog import load_catalog, network
from core.planner.plan import gpu_hardware
from core.planner.request import HardwareSpec, Precision

CATALOG = load_catalog()


@pytest.mark.parametrize(
    ("gpu", "fabric", "per_gpu"),
    [
        ("A100-80GB-SXM", "efa", 400 / 8),
        ("A100-40GB-SXM", "efa", 400 / 8),
        ("H100-SXM", "efa", 3200 / 8),
        ("A100-80GB-SXM", "infiniband", 200.0),
        ("H100-SXM", "infiniband", 400.0),
    ],
)
def test_the_plan_takes_the_instances_nics(gpu: str, fabric: str, per_gpu: float) -> None:
    hw = gpu_hardware(
        CATALOG.gpu(gpu),
        HardwareSpec(gpu=gpu, gpus_per_node=8, nodes=2, interconnect=fabric),
        Precision.amp_bf16,
    )
    assert hw.gpu_net_gbps == pytest.approx(per_gpu)
    assert network.network_gbps(fabric, gpu, 8, CATALOG) == pytest.approx(per_gpu)


def test_a_stated_speed_still_wins_over_the_fabric_name() -> None:
    spec = HardwareSpec(
        gpu="A100-80GB-SXM", gpus_per_node=8, nodes=2, interconnect="efa", inter_node_gbps=1600
    )
    assert gpu_hardware(
        CATALOG.gpu("A100-80GB-SXM"), spec, Precision.amp_bf16
    ).gpu_net_gbps == pytest.approx(200)
