"""What the data-parallel wire carries per step (core/planner/speed/comms.py: gradient_bytes,
step_comm_bytes).

Expected ratios by hand from the byte counts, not from the code: Llama 2 7B has 6.74B parameters.
- ZeRO-1 reduce-scatters the gradients and all-gathers the stepped parameters, half an all-reduce
  each. In 16-bit both halves move 2 B a parameter: one all-reduce of 2 B. Megatron reduces its
  gradients in fp32 (megatron/training/arguments.py: "bfloat16 requires gradient accumulation and
  all-reduce to be done in fp32"; NeMo's and Megatron-Bridge's recipes set grad_reduce_in_fp32): ½·4
  + ½·2 = 3 B, 1.5 × DeepSpeed's ZeRO-1 in bf16.
- DeepSpeed's BF16_Optimizer all-reduces the whole fp32 gradient, then all-gathers the bf16
  parameters (DeepSpeed runtime/pipe/engine.py, _bf16_reduce_grads): 4 + ½·2 = 5 B, 5/3 × Megatron's
  distributed optimizer.
- PyTorch DDP under autocast keeps fp32 parameters, so it all-reduces fp32 gradients: 2 × the bytes
  of a model cast to bf16.
The tests compare the per-step payload each layout puts on the wire (all-reduce-equivalent bytes;
the plan's collective time is that over the bus bandwidth, plus per-call latency).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from core.planner.plan import plan
from core.planner.request import Framework, PlanRequest, Sharding
from core.planner.speed import comms
from core.validation import validation_message


def _request(hardware: dict[str, Any] | None = None, **training: Any) -> PlanRequest:
    return PlanRequest.model_validate(
        {
            "model": {"preset": "llama-2-7b"},
            "data": {"tokens": 1e9, "seq_len": 2048},
            "training": {
                "method": "full",
                "micro_batch_size": 1,
                "global_batch_size": 64,
                "gradient_checkpointing": True,
                **training,
            },
            "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1, **(hardware or {})},
        }
    )


def _payload(**training: Any) -> float:
    """All-reduce-equivalent bytes per GPU per step for Llama 2 7B's 6.74B parameters."""
    t = _request(**training).training
    params = 6.74e9
    return float(
        comms.step_comm_bytes(
            t.sharding,
            params * comms.gradient_bytes(t),
            params * 2,
            accumulation=8,
            stepped_param_bytes=params * 2,
            gradients_all_reduced=bool(t.gradients_all_reduced),
        )
    )


def test_megatron_moves_half_as_much_again_as_deepspeed_because_its_gradients_travel_in_fp32() -> (
    None
):
    deepspeed = _payload(framework="deepspeed", sharding="zero1", precision="amp_bf16")
    megatron = _payload(framework="megatron", sharding="zero1", precision="amp_bf16")
    assert deepspeed == pytest.approx(6.74e9 * 2)
    assert megatron / deepspeed == pytest.approx(1.5)


def test_bf16_optimizers_whole_gradient_all_reduce_moves_five_thirds_of_a_reduce_scatter() -> None:
    scattered = _payload(framework="megatron", sharding="zero1", precision="amp_bf16")
    all_reduced = _payload(
        framework="megatron", sharding="zero1", precision="amp_bf16", gradients_all_reduced=True
    )
    assert all_reduced / scattered == pytest.approx(5 / 3)


def test_ddp_under_autocast_all_reduces_fp32_gradients() -> None:
    autocast = _payload(framework="hf_trainer", sharding="none", precision="amp_bf16")
    cast = _payload(framework="hf_trainer", sharding="none", precision="pure_bf16")
    assert autocast / cast == pytest.approx(2.0)


def test_the_plan_of_a_stack_that_reduces_in_fp32_spends_longer_on_the_wire() -> None:
    def comm_s(framework: str) -> float:
        request = _request(framework=framework, sharding="zero1", precision="amp_bf16")
        return plan(request).compute.comm_time_s

    assert comm_s("megatron") > comm_s("deepspeed")


def test_the_whole_gradient_all_reduce_is_refused_where_there_is_no_sharded_optimizer() -> None:
    with pytest.raises(ValidationError) as caught:
        _request(sharding="fsdp", gradients_all_reduced=True)
    assert validation_message(caught.value) == (
        "training.gradients_all_reduced needs sharding zero1 or zero2: DDP always all-reduces and "
        "ZeRO-3, FSDP and HSDP reduce-scatter (sharding is fsdp)"
    )


def test_a_request_that_leaves_it_out_saves_without_it() -> None:
    assert "gradients_all_reduced" not in _request().model_dump(mode="json")["training"]
    kept = _request(sharding="zero1", gradients_all_reduced=True).model_dump(mode="json")
    assert kept["training"]["gradients_all_reduced"] is True


def test_each_stack_reduces_in_buckets_of_its_own_size() -> None:
    """PyTorch DDP bucket_cap_mb 25; Megatron-Core max(40M, 1M × dp) parameters; DeepSpeed
    reduce_bucket_size 5e8 elements: their documented defaults."""
    assert comms.bucket_bytes(Framework.hf_trainer, 4.0, 8) == 25 * 2**20
    assert float(comms.bucket_bytes(Framework.megatron, 4.0, 8)) == 40e6 * 4
    assert float(comms.bucket_bytes(Framework.megatron, 4.0, 128)) == 128e6 * 4
    assert comms.bucket_bytes(Framework.deepspeed, 2.0, 8) == 5e8 * 2


def test_megatron_pays_latency_for_its_few_large_buckets_not_for_25_mib_ones() -> None:
    """Llama 2 7B's fp32 gradients, 26.96 GB, in 160 MB buckets: ⌈26.96e9 ÷ 160e6⌉ = 169 buckets, a
    reduce-scatter and an all-gather each; in PyTorch DDP's 25 MiB buckets it would be 1,029."""
    grads = 6.74e9 * 4
    bucket = comms.bucket_bytes(Framework.megatron, 4.0, 8)
    assert float(comms.collectives_per_step(Sharding.zero1, grads, 32, 8, bucket)) == 2 * 169


def test_only_the_last_micro_batchs_backward_covers_a_ddp_or_zero1_reduction() -> None:
    """8 micro-batches of 3 s of passes each (1 forward, 2 backward): the last backward is 2 s; with
    every block's forward recomputed in backward, 3 of its 4 s."""
    passes = 24.0
    assert float(comms.reduction_cover(Sharding.none, passes, 8, 0.0)) == pytest.approx(2.0)
    assert float(comms.reduction_cover(Sharding.zero1, passes * 4 / 3, 8, 1.0)) == pytest.approx(
        3.0
    )
    assert float(comms.reduction_cover(Sharding.fsdp, passes, 8, 0.0)) == passes


def _megatron_backward_chunks(pp: int, v: int, micro_batches: int) -> list[int]:
    """The model chunk of each backward a stage runs, in order, as Megatron-Core's interleaved
    schedule picks it (megatron/core/pipeline_parallel/schedules.py, get_model_chunk_id with
    forward=False: chunk v − 1 − (k mod p·v) // p for the k-th backward)."""
    return [v - 1 - (k % (pp * v)) // pp for k in range(micro_batches * v)]


@pytest.mark.parametrize(("pp", "v", "micro_batches"), [(8, 12, 8), (8, 12, 128), (4, 2, 16)])
def test_an_interleaved_pipeline_hides_each_chunks_reduction_behind_the_later_chunks_backwards(
    pp: int, v: int, micro_batches: int
) -> None:
    """Megatron-Core starts a chunk's gradient reduction when its last micro-batch backward ends.
    Counted from the schedule's own order: the first chunk to finish leaves (v − 1)·p chunk
    backwards after it, and with its own last backward that is ((v − 1)·p + 1) chunk backwards,
    each 1/v of a micro-batch's (GPT-3 175B in MLPerf v3.1: p 8, v 12, 8 or 128 micro-batches a
    step)."""
    order = _megatron_backward_chunks(pp, v, micro_batches)
    last = {chunk: i for i, chunk in enumerate(order)}
    first_done = min(last.values())
    behind = len(order) - first_done  # its own last backward and every one after it
    window = float(comms.chunk_window(micro_batches, pp, v))
    assert window == pytest.approx(behind / v)
    passes = 3.0 * micro_batches  # 1 s forward + 2 s backward a micro-batch
    assert float(comms.reduction_cover(Sharding.zero1, passes, micro_batches, 0.0, pp, v)) == (
        pytest.approx(2.0 * behind / v)
    )


def test_without_interleaving_a_stage_reduces_behind_its_last_backward_only() -> None:
    """One chunk a stage: its last backward is the step's last, as without a pipeline."""
    assert float(comms.chunk_window(64, 8, 1)) == 1.0
    assert float(comms.chunk_window(64, 1, 1)) == 1.0


def test_accumulating_more_micro_batches_does_not_hide_the_gradient_all_reduce() -> None:
    """DDP over plain Ethernet (12.5 Gbit/s a GPU): the all-reduce fires in the last micro-batch's
    backward whatever came before it (PyTorch DDP no_sync), so eight micro-batches a step leave as
    much of it exposed as one."""

    def exposed(global_batch: int) -> float:
        request = _request(
            hardware={"nodes": 2, "interconnect": "ethernet"},
            sharding="none",
            precision="pure_bf16",
            global_batch_size=global_batch,
        )
        return plan(request).compute.step_breakdown_s.exposed_comm

    one, eight = exposed(16), exposed(128)
    assert one > 0.5
    assert eight == pytest.approx(one, rel=0.01)


def test_zero2_reduce_scatters_in_every_micro_batch_and_gathers_once() -> None:
    """ZeRO-2 keeps only its partition of the gradients, so each of 8 micro-batches reduce-scatters
    them (half an all-reduce each) before the one post-step all-gather: 8 × ½ + ½ = 4.5 all-reduces
    of 2 B a parameter, against ZeRO-1's one."""
    zero1 = _payload(framework="deepspeed", sharding="zero1", precision="amp_bf16")
    zero2 = _payload(framework="deepspeed", sharding="zero2", precision="amp_bf16")
    assert zero2 / zero1 == pytest.approx(4.5)


def test_ddp_under_autocast_sends_fp32_gradients_to_a_sharded_optimizer_too() -> None:
    """PyTorch's ZeroRedundancyOptimizer under DDP: DDP all-reduces the fp32 gradients autocast
    leaves on fp32 parameters, then each rank steps its share (flash-attention's GPT-3 760M-2.7B
    runs). 4 B a gradient, against 2 B where the stack holds a bf16 model."""
    autocast = _request(sharding="zero1", precision="amp_bf16", gradients_all_reduced=True)
    cast = _request(sharding="zero1", precision="pure_bf16", gradients_all_reduced=True)
    assert comms.gradient_bytes(autocast.training) == 4.0
    assert comms.gradient_bytes(cast.training) == 2.0


def test_interleaving_hides_more_of_the_gradient_reduction() -> None:
    """Llama 2 7B over 4 stages on 4 InfiniBand nodes, 8 micro-batches a step: four chunks a stage
    give the reduction (3·4 + 1)/4 = 3.25 micro-batch backwards to hide behind instead of one. At
    the default 70% overlap that hides 0.7 × 2.25 more backwards (each ⅔ of a micro-batch's
    passes); the four chunks' extra pipeline sends show in full. (The stack's sustained efficiency,
    within 1% of one for Megatron on Hopper, scales every part of the step alike.)"""

    def costs(v: int) -> tuple[float, float, float]:
        request = _request(
            hardware={"nodes": 4, "interconnect": "infiniband"},
            framework="megatron",
            sharding="zero1",
            pipeline_parallel=4,
            pipeline_virtual_stages=v,
            gradient_checkpointing=False,
        )
        compute = plan(request).compute
        parts = compute.step_breakdown_s
        passes = parts.gemm + parts.attention + parts.memory_bound
        return parts.exposed_comm, passes, compute.comm_time_s

    one, passes, comm_one = costs(1)
    four, _, comm_four = costs(4)
    backward = passes / 8 * 2 / 3
    assert one - four == pytest.approx(0.7 * 2.25 * backward - (comm_four - comm_one), rel=0.01)
    assert four < one
