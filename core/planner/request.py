"""The plan request: what the user asks the planner, the public JSON contract's input.

Users script this shape (``tuneplan plan REQUEST.json``, ``tuneplan schema``), so field names are
stable. Sizes are bytes (integers), times are seconds or hours as named, money is USD. Every field
carries a description; the GUI builds its forms and error messages from them. The validators here
check one request's coherence (one sentence naming the field); the result the planner answers with
is core/planner/result.py, apart because nothing in a request depends on it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, model_validator

from core.catalog.records import (  # the one definition, shared with the catalog
    Allowance,
    Interconnect,
    PricingMode,
)

# the request's named choices, re-exported: callers import them from here
from core.planner.choices import (
    Attention,
    CrossEntropy,
    Framework,
    Method,
    Offload,
    Optimizer,
    OptimizerKernel,
    Precision,
    ReduceDtype,
    Sharding,
)
from core.planner.measured_step import MeasuredHardware
from core.planner.model.lora_targets import check_target_parameters, target_set
from core.planner.request_assumptions import Assumptions
from core.planner.request_fields import (
    TEN_YEARS_HOURS,
    TokenCount,
    allowance_list,
    dns_label,
    left_out,
    within,
)
from core.planner.request_ranges import RequestModel

Checkpointing = Literal["none", "selective", "full"]


class ModelSpec(RequestModel):
    """Exactly one of: a preset id, a Hugging Face config (inline or a file path), or a parameter
    count."""

    model_config = ConfigDict(extra="allow")

    preset: str | None = Field(
        None, title="Preset", description="catalog model id, e.g. llama-3.1-8b"
    )
    hf_config: str | None = Field(
        None, title="config.json path", description="path to a Hugging Face config.json"
    )
    params: Annotated[TokenCount | None, within(1e7, 1e14, "10M to 100T parameters")] = Field(
        None, title="Parameters", description="total parameter count, e.g. 7e9 or 7B"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelSpec:
        inline = bool(self.model_extra) and "hidden_size" in (self.model_extra or {})
        given = [
            n
            for n, v in (
                ("preset", self.preset),
                ("hf_config", self.hf_config),
                ("params", self.params),
            )
            if v is not None
        ]
        if inline:
            given.append("config.json keys")
        if len(given) != 1:
            raise ValueError(
                "model needs exactly one of preset, hf_config, params or inline config.json keys"
                f" (got {', '.join(given) or 'none'})"
            )
        if self.model_extra and not inline:
            raise ValueError(f"model has unknown keys: {', '.join(sorted(self.model_extra))}")
        return self

    @property
    def inline_config(self) -> dict[str, Any] | None:
        return dict(self.model_extra) if self.model_extra else None


class DataSpec(RequestModel):
    tokens: Annotated[
        TokenCount, within(0, 1e15, "more than 0 and at most 1e15 (1,000T) tokens", low_open=True)
    ] = Field(
        ..., gt=0, title="Dataset tokens", description="tokens in one epoch, e.g. 2e8 or 200M"
    )
    epochs: float = Field(1.0, gt=0, le=1000, title="Epochs")
    seq_len: int = Field(
        2048, ge=16, le=2_097_152, title="Sequence length", description="tokens per sample"
    )
    packing: bool = Field(
        True, title="Packing", description="pack samples to full sequences (no padding waste)"
    )
    padding_fraction: float = Field(
        0.0,
        ge=0,
        lt=0.95,
        title="Padding waste",
        description="fraction of each unpacked sequence that is padding (ignored when packing)",
    )
    bytes_per_token: float = Field(
        4.0,
        gt=0,
        le=64,
        title="Raw bytes per token",
        description="raw text bytes per token (≈4 for English BPE)",
    )
    file_count: Annotated[int | None, within(1, 1e12, "1 to 1e12 files")] = Field(
        None,
        ge=1,
        title="Files",
        description="number of raw files the dataset is stored as (unpacked)",
    )


class TrainingSpec(RequestModel):
    method: Method = Field(Method.lora, title="Method")
    lora_rank: int | None = Field(None, ge=1, le=4096, title="LoRA rank")
    lora_dropout: float = Field(
        0.0,
        ge=0,
        lt=1,
        title="LoRA dropout",
        description="dropout on adapter inputs (keeps a mask and a copy)",
    )
    lora_targets: str | list[str] = Field(
        "all-linear",
        title="LoRA targets",
        description="all-linear, attention, a comma list of q,k,v,o,gate,up,down, or PEFT "
        "target_modules names "
        'such as ["q_proj", "v_proj"]',
    )
    lora_target_parameters: list[str] | None = Field(
        None,
        title="LoRA target parameters",
        exclude_if=left_out,
        description='PEFT target_parameters: fused expert weights, ["mlp.experts.gate_up_proj", '
        '"mlp.experts.down_proj"] (short: experts_gate_up, experts_down)',
    )
    precision: Precision = Field(Precision.amp_bf16, title="Precision")
    optimizer: Optimizer = Field(Optimizer.adamw, title="Optimizer")
    sharding: Sharding = Field(Sharding.none, title="Sharding")
    offload: Offload = Field(Offload.none, title="Offload")
    gradient_checkpointing: bool | Literal["selective"] = Field(
        True,
        title="Gradient checkpointing",
        description="true (every layer's input kept, the layer recomputed), selective (only the "
        "attention core recomputed, Korthikanti et al. 2022) or false",
    )
    checkpoint_every_k_blocks: int | None = Field(
        None,
        ge=1,
        le=1024,
        title="Checkpoint every k-th block",
        exclude_if=left_out,
        description="with gradient_checkpointing true: recompute only blocks k, 2k, 3k … "
        "(torchtitan's selective_ac_option \"k\", fms-fsdp's selective_checkpointing 1/k)",
    )
    attention: Attention = Field(Attention.flash, title="Attention")
    micro_batch_size: int = Field(1, ge=1, le=4096, title="Micro-batch")
    global_batch_size: int | None = Field(
        None,
        ge=1,
        le=16_777_216,
        title="Global batch",
        description="sequences per optimizer step (default: ~262k tokens, at least micro × "
        "data-parallel replicas)",
    )
    optimizer_kernel: OptimizerKernel | None = Field(
        None,
        title="AdamW kernel",
        exclude_if=left_out,
        description="fused: one pass a step (torch fused=True, apex, Transformer Engine or "
        "DeepSpeed FusedAdam); foreach: PyTorch's multi-tensor default, a pass per operation; "
        "left out: the stack's own",
    )
    gradient_reduce_dtype: ReduceDtype | None = Field(
        None,
        title="Gradient reduction dtype",
        exclude_if=left_out,
        description="the dtype gradients travel in between data-parallel replicas: fp32 "
        "(Megatron's grad_reduce_in_fp32) or bf16 (--grad-reduce-in-bf16, apex "
        "DistributedFusedAdam grad_sync_dtype); left out: the stack's",
    )
    gradient_bucket_elements: int | None = Field(
        None,
        ge=1,
        le=100_000_000_000,
        title="Gradient bucket",
        exclude_if=left_out,
        description="gradient elements one data-parallel collective carries (Megatron "
        "--ddp-bucket-size, DeepSpeed reduce_bucket_size; PyTorch DDP: bucket_cap_mb × 2^20 ÷ "
        "the gradient's bytes); left out: the stack's default",
    )
    gradient_clipping: bool | None = Field(
        None,
        title="Gradient clipping",
        exclude_if=left_out,
        description="false: no global-norm clipping pass over the gradients before each step; "
        "left out: clipped, as every stack does by default",
    )
    optimizer_in_backward: bool = Field(False, title="Optimizer in backward")
    double_quant: bool = Field(True, title="Double quantization (QLoRA)")
    quantized_inputs_kept: bool | None = Field(
        None,
        title="4-bit linears keep inputs",
        exclude_if=left_out,
        description="true: bitsandbytes before 0.43.2 (QLoRA), each 4-bit linear keeps its input "
        "for backward",
    )
    gradients_all_reduced: bool | None = Field(
        None,
        title="ZeRO-1 all-reduces gradients",
        exclude_if=left_out,
        description="true: the sharded optimizer all-reduces the whole gradient before each rank "
        "steps its share (DeepSpeed's BF16_Optimizer, as Megatron-DeepSpeed's bf16 pipelines run "
        "it); left out: ZeRO-1/2 reduce-scatter",
    )
    cross_entropy: CrossEntropy = Field(
        CrossEntropy.standard,
        title="Cross-entropy",
        description="standard, chunked or fused (logits never whole)",
    )
    activation_offload: bool = Field(
        False,
        title="Activation offload",
        description="keep checkpointed layer inputs in host memory",
    )
    compile: bool = Field(
        False, title="torch.compile", description="fuse elementwise kernels (fewer launches)"
    )
    framework: Framework = Field(
        Framework.hf_trainer,
        title="Framework",
        description="sets the framework's documented defaults",
    )
    tensor_parallel: int = Field(
        1, ge=1, le=64, title="Tensor parallel", description="GPUs sharing each layer"
    )
    pipeline_parallel: int = Field(
        1, ge=1, le=512, title="Pipeline parallel", description="pipeline stages"
    )
    pipeline_virtual_stages: int = Field(
        1,
        ge=1,
        le=64,
        title="Virtual stages",
        description="interleaved model chunks per pipeline GPU",
    )
    pipeline_first_stage_layers: int | None = Field(
        None,
        ge=1,
        le=100_000,
        title="First stage layers",
        exclude_if=left_out,
        description="layers of the first pipeline stage (Megatron-LM's "
        "--decoder-first-pipeline-num-layers); the middle stages split the rest evenly",
    )
    pipeline_last_stage_layers: int | None = Field(
        None,
        ge=1,
        le=100_000,
        title="Last stage layers",
        exclude_if=left_out,
        description="layers of the last pipeline stage (--decoder-last-pipeline-num-layers)",
    )
    context_parallel: int = Field(
        1, ge=1, le=512, title="Context parallel", description="GPUs sharing a sequence"
    )
    sequence_parallel: bool = Field(
        False,
        title="Sequence parallel",
        description="shard norms and dropout along the sequence (needs tp > 1)",
    )
    expert_parallel: int = Field(
        1, ge=1, le=1024, title="Expert parallel", description="GPUs sharing the experts"
    )

    @property
    def checkpointing(self) -> Checkpointing:
        """The recomputation regime: 'none', 'selective' (attention core only) or 'full' (every
        layer)."""
        if self.gradient_checkpointing == "selective":
            return "selective"
        return "full" if self.gradient_checkpointing else "none"

    def checkpointed_fraction(self, layers: int) -> float:
        """Share of the blocks that recompute their forward: 1 under true, 0 under false or
        selective, ⌊L/k⌋ of L with checkpoint_every_k_blocks k (torchtitan wraps the blocks whose
        1-based count % k == 0)."""
        k = self.checkpoint_every_k_blocks or 1
        return (
            0.0 if self.checkpointing != "full" else (layers // k) / layers if layers > 0 else 1.0
        )

    @property
    def model_parallel(self) -> int:
        """GPUs one model replica spans: tensor × pipeline × context parallel (dp = GPUs ÷ this)."""
        return self.tensor_parallel * self.pipeline_parallel * self.context_parallel

    @model_validator(mode="after")
    def _coherent(self) -> TrainingSpec:
        if self.method is Method.full and self.lora_rank is not None:
            raise ValueError(
                "training.lora_rank is only allowed with method lora or qlora (method is full)"
            )
        if self.method is not Method.full and self.lora_rank is None:
            self.lora_rank = 16
            # the default, not the user's choice: saved unset
            self.__pydantic_fields_set__.discard("lora_rank")
        if self.offload is not Offload.none and self.sharding is Sharding.none:
            raise ValueError(
                "training.offload needs sharding zero1, zero2, zero3, fsdp or hsdp (sharding is "
                "none)"
            )
        if self.offload is Offload.optimizer_and_params and self.sharding in (
            Sharding.zero1,
            Sharding.zero2,
        ):
            raise ValueError(
                "training.offload optimizer_and_params needs sharding zero3, fsdp or hsdp"
            )
        if self.gradients_all_reduced and self.sharding not in (Sharding.zero1, Sharding.zero2):
            raise ValueError(
                "training.gradients_all_reduced needs sharding zero1 or zero2: DDP always "
                "all-reduces and ZeRO-3, FSDP and HSDP reduce-scatter (sharding is "
                f"{self.sharding.value})"
            )
        if self.optimizer_kernel is not None and self.optimizer is not Optimizer.adamw:
            raise ValueError(
                "training.optimizer_kernel applies to optimizer adamw only (optimizer is "
                f"{self.optimizer.value})"
            )
        if self.global_batch_size is not None and self.global_batch_size < self.micro_batch_size:
            raise ValueError(
                "training.global_batch_size must be at least training.micro_batch_size"
            )
        if isinstance(self.lora_targets, list) and not self.lora_targets:
            raise ValueError(
                'training.lora_targets is an empty list; name modules such as ["q_proj", "v_proj"]'
            )
        if self.method is not Method.full:
            # one sentence naming the unknown module and what is allowed
            target_set(self.lora_targets)
        if self.sequence_parallel and self.tensor_parallel == 1:
            raise ValueError(
                "training.sequence_parallel needs training.tensor_parallel of 2 or more"
            )
        if self.activation_offload and self.checkpointing != "full":
            raise ValueError(
                "training.activation_offload needs gradient_checkpointing true: it moves the "
                "checkpointed layer "
                "inputs to host memory (gradient_checkpointing is "
                f"{str(self.gradient_checkpointing).lower()})"
            )
        if self.pipeline_virtual_stages > 1 and self.pipeline_parallel == 1:
            raise ValueError(
                "training.pipeline_virtual_stages needs training.pipeline_parallel of 2 or more"
            )
        if self.checkpoint_every_k_blocks is not None and self.gradient_checkpointing is not True:
            raise ValueError(
                "training.checkpoint_every_k_blocks needs gradient_checkpointing true: it picks "
                "the "
                f"blocks that recompute (it is {str(self.gradient_checkpointing).lower()})"
            )
        if (self.checkpoint_every_k_blocks or 1) > 1 and self.activation_offload:
            raise ValueError(
                "training.activation_offload needs every block checkpointed; leave out "
                "training.checkpoint_every_k_blocks (or set it to 1)"
            )
        check_target_parameters(self.lora_target_parameters, self.method.value, self.lora_dropout)
        return self


class HardwareSpec(RequestModel, MeasuredHardware):
    gpu: str = Field(
        ..., title="GPU", description="catalog GPU id, e.g. H100-SXM (case-insensitive)"
    )
    gpus_per_node: int = Field(
        1,
        ge=1,
        le=72,
        title="GPUs per node",
        description="the GPUs one NVLink or PCIe domain joins: 8 on an HGX board, up to 72 in a "
        "GB200 NVL72 rack",
    )
    nodes: int = Field(1, ge=1, le=8192, title="Nodes")
    interconnect: Interconnect | None = Field(
        None,
        title="Inter-node network",
        description="default: what a typical node of this GPU class has",
    )
    inter_node_gbps: Annotated[
        float | None,
        within(0, 100_000, "more than 0 and at most 100,000 Gbit/s per node", low_open=True),
    ] = Field(
        None,
        gt=0,
        title="Inter-node bandwidth",
        description="Gbit/s per node (default from the network type)",
    )
    intra_node_busbw_gbs: Annotated[
        float | None, within(0, 10_000, "more than 0 and at most 10,000 GB/s", low_open=True)
    ] = Field(
        None,
        gt=0,
        title="Measured intra-node busbw",
        description="GB/s, e.g. from an NCCL all-reduce probe",
    )
    matmul_tflops: Annotated[
        float | None, within(0, 100_000, "more than 0 and at most 100,000 TFLOP/s", low_open=True)
    ] = Field(
        None,
        gt=0,
        title="Measured matmul TFLOP/s",
        description="achievable dense matmul TFLOP/s per GPU, e.g. from the probe's GPU matmul",
    )

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


class PricingSpec(RequestModel):
    provider: str | None = Field(
        None, title="Provider", description="e.g. aws, lambda, runpod (cheapest if empty)"
    )
    mode: PricingMode = Field(PricingMode.on_demand, title="Pricing mode")
    usd_per_gpu_hour: Annotated[
        float | None, within(0.01, 1000, "$0.01 to $1,000 per GPU-hour")
    ] = Field(None, title="Price override", description="USD per GPU-hour")
    discount: float = Field(
        0.0, ge=0, lt=1, title="Discount", description="negotiated discount, 0–1"
    )
    allow: Annotated[list[Allowance], BeforeValidator(allowance_list)] = Field(
        default_factory=list,
        title="Also price",
        description="marketplace (community/peer hosts, on-demand plans) and auction (bid floors, "
        "spot plans): used only when named here",
    )


class SearchSpec(RequestModel):
    objective: Literal["cost", "time", "cost_under_deadline"] = Field("cost", title="Rank by")
    deadline_hours: Annotated[
        float | None,
        within(
            0, TEN_YEARS_HOURS, "more than 0 and at most 87,660 hours (10 years)", low_open=True
        ),
    ] = Field(None, gt=0, title="Deadline (hours)")
    max_gpus: int = Field(512, ge=1, le=65536, title="Most GPUs")
    longest_hours: Annotated[
        float | None,
        within(
            0, TEN_YEARS_HOURS, "more than 0 and at most 87,660 hours (10 years)", low_open=True
        ),
    ] = Field(
        720.0,
        title="Longest run (hours)",
        description="plans longer than this are ranked only when nothing shorter fits (default 30 "
        "days)",
    )
    gpus: list[str] | None = Field(None, title="GPUs to consider (default: all with a price)")


class LaunchSpec(RequestModel):
    """How the launch files submit the run: settings of the cluster it runs on, not of the plan's
    figures."""

    kueue_queue: Annotated[str | None, dns_label("launch.kueue_queue")] = Field(
        None,
        title="Kueue queue",
        exclude_if=left_out,
        description="the LocalQueue the Kubernetes job is submitted to "
        "(kueue.x-k8s.io/queue-name); none: no queue",
    )
    kubernetes_job: Literal["trainjob_and_jobset", "pytorchjob"] = Field(
        "trainjob_and_jobset",
        title="Kubernetes job",
        description="the operator's object the kubernetes format writes: Kubeflow Trainer's "
        "TrainJob and a JobSet, or Kubeflow's older PyTorchJob",
    )


class PlanRequest(RequestModel):
    schema_: str | None = Field(
        None, alias="$schema", exclude=True, title="JSON Schema", description="for editors"
    )
    model: ModelSpec
    data: DataSpec
    training: TrainingSpec = Field(default_factory=TrainingSpec)
    hardware: HardwareSpec | None = None
    pricing: PricingSpec = Field(default_factory=PricingSpec)
    search: SearchSpec = Field(default_factory=SearchSpec)
    assumptions: Assumptions = Field(default_factory=Assumptions)
    launch: LaunchSpec | None = Field(
        None,
        title="Launch",
        exclude_if=left_out,
        description="cluster settings for the launch files (Kubernetes job, Kueue queue)",
    )
