"""The hardware a step is timed on: one GPU's rates and the topology, as scalars or broadcastable
arrays.

Both the step's end-to-end evaluation (step.py) and its costs per micro-batch (step_time.py) read
it, so it lives apart from both: step.py calls step_time.py, and step_time.py needs only this record
from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.planner.measured_step import MeasuredStep

Num = Any


@dataclass(frozen=True)
class Hardware:
    """GPU properties and topology, as scalars or broadcastable arrays."""

    memory_bytes: Num
    peak_tflops: Num  # dense peak for the training precision
    intra_gbs: Num
    gpus_per_node: Num
    nodes: Num
    gpu_net_gbps: Num  # inter-node network per GPU, Gbit/s
    hbm_gbs: Num  # memory bandwidth, GB/s
    # E_mm: achievable matmul ÷ peak (MAMF table, measured, or the heuristic)
    matmul_efficiency: Num
    attention_efficiency: Num  # flash/SDPA forward + backward ÷ peak (kernels.attention_efficiency)
    pcie_gbs: Num  # host link per direction, GB/s
    measured_intra_busbw_gbs: float | None = None
    # one layer timed on the box (step_time.measured_compute)
    measured_step: MeasuredStep | None = None
    # the framework's sustained share of the modelled step on this GPU (sustained.py)
    sustained: Num = 1.0
    # FP8 GEMM rate ÷ BF16 GEMM rate: what the FP8 linears gain and the BF16 head does not
    fp8_gain: Num = 1.0

    @property
    def gpus(self) -> Num:
        return self.gpus_per_node * self.nodes
