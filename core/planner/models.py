"""The public JSON contract of the planner: plan requests and plan results.

Users script these shapes (``tuneplan plan REQUEST.json --json``), so field names are stable.
Sizes are bytes (integers), times are seconds or hours as named, money is USD.
Every field carries a description; the GUI builds its forms and error messages from them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ModelWrapValidatorHandler, model_validator

from core.catalog.records import (  # the one definition, shared with the catalog
    Allowance,
    Interconnect,
    PricingMode,
    StorageTier,
)
from core.planner.choices import (  # the request's named choices, re-exported: callers import them from here
    Attention,
    CrossEntropy,
    Framework,
    Method,
    Offload,
    Optimizer,
    Precision,
    Sharding,
)
from core.planner.measured_step import MeasuredHardware, StepSource
from core.planner.model.lora_targets import check_target_parameters, target_set
from core.planner.request_fields import TEN_YEARS_HOURS, TokenCount, allowance_list, dns_label, left_out, within
from core.planner.request_ranges import restate_ranges

Checkpointing = Literal["none", "selective", "full"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_enum_values=False, allow_inf_nan=False)

    @model_validator(mode="wrap")
    @classmethod
    def _both_bounds(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        return restate_ranges(cls, data, handler)


# --------------------------------------------------------------------------- request


class ModelSpec(_Strict):
    """Exactly one of: a preset id, a Hugging Face config (inline or a file path), or a parameter count."""

    model_config = ConfigDict(extra="allow")

    preset: str | None = Field(None, title="Preset", description="catalog model id, e.g. llama-3.1-8b")
    hf_config: str | None = Field(None, title="config.json path", description="path to a Hugging Face config.json")
    params: Annotated[TokenCount | None, within(1e7, 1e14, "10M to 100T parameters")] = Field(
        None, title="Parameters", description="total parameter count, e.g. 7e9 or 7B"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelSpec:
        inline = bool(self.model_extra) and "hidden_size" in (self.model_extra or {})
        given = [
            n
            for n, v in (("preset", self.preset), ("hf_config", self.hf_config), ("params", self.params))
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


class DataSpec(_Strict):
    tokens: Annotated[TokenCount, within(0, 1e15, "more than 0 and at most 1e15 (1,000T) tokens", low_open=True)] = (
        Field(..., gt=0, title="Dataset tokens", description="tokens in one epoch, e.g. 2e8 or 200M")
    )
    epochs: float = Field(1.0, gt=0, le=1000, title="Epochs")
    seq_len: int = Field(2048, ge=16, le=2_097_152, title="Sequence length", description="tokens per sample")
    packing: bool = Field(True, title="Packing", description="pack samples to full sequences (no padding waste)")
    padding_fraction: float = Field(
        0.0,
        ge=0,
        lt=0.95,
        title="Padding waste",
        description="fraction of each unpacked sequence that is padding (ignored when packing)",
    )
    bytes_per_token: float = Field(
        4.0, gt=0, le=64, title="Raw bytes per token", description="raw text bytes per token (≈4 for English BPE)"
    )
    file_count: Annotated[int | None, within(1, 1e12, "1 to 1e12 files")] = Field(
        None, ge=1, title="Files", description="number of raw files the dataset is stored as (unpacked)"
    )


class TrainingSpec(_Strict):
    method: Method = Field(Method.lora, title="Method")
    lora_rank: int | None = Field(None, ge=1, le=4096, title="LoRA rank")
    lora_dropout: float = Field(
        0.0, ge=0, lt=1, title="LoRA dropout", description="dropout on adapter inputs (keeps a mask and a copy)"
    )
    lora_targets: str | list[str] = Field(
        "all-linear",
        title="LoRA targets",
        description="all-linear, attention, a comma list of q,k,v,o,gate,up,down, or PEFT target_modules names "
        "such as [\"q_proj\", \"v_proj\"]",
    )
    lora_target_parameters: list[str] | None = Field(None, title="LoRA target parameters", exclude_if=left_out,
        description="PEFT target_parameters: fused expert weights, [\"mlp.experts.gate_up_proj\", "
        "\"mlp.experts.down_proj\"] (short: experts_gate_up, experts_down)")
    precision: Precision = Field(Precision.amp_bf16, title="Precision")
    optimizer: Optimizer = Field(Optimizer.adamw, title="Optimizer")
    sharding: Sharding = Field(Sharding.none, title="Sharding")
    offload: Offload = Field(Offload.none, title="Offload")
    gradient_checkpointing: bool | Literal["selective"] = Field(
        True,
        title="Gradient checkpointing",
        description="true (every layer's input kept, the layer recomputed), selective (only the attention core "
        "recomputed, Korthikanti et al. 2022) or false",
    )
    checkpoint_every_k_blocks: int | None = Field(None, ge=1, le=1024, title="Checkpoint every k-th block",
        exclude_if=left_out, description="with gradient_checkpointing true: recompute only blocks k, 2k, 3k … "
        "(torchtitan's selective_ac_option \"k\", fms-fsdp's selective_checkpointing 1/k)")
    attention: Attention = Field(Attention.flash, title="Attention")
    micro_batch_size: int = Field(1, ge=1, le=4096, title="Micro-batch")
    global_batch_size: int | None = Field(
        None, ge=1, le=16_777_216, title="Global batch",
        description="sequences per optimizer step (default: ~262k tokens, at least micro × data-parallel replicas)",
    )
    optimizer_in_backward: bool = Field(False, title="Optimizer in backward")
    double_quant: bool = Field(True, title="Double quantization (QLoRA)")
    quantized_inputs_kept: bool | None = Field(
        None, title="4-bit linears keep inputs", exclude_if=left_out,
        description="true: bitsandbytes before 0.43.2 (QLoRA), each 4-bit linear keeps its input for backward",
    )
    cross_entropy: CrossEntropy = Field(
        CrossEntropy.standard, title="Cross-entropy", description="standard, chunked or fused (logits never whole)"
    )
    activation_offload: bool = Field(
        False, title="Activation offload", description="keep checkpointed layer inputs in host memory"
    )
    compile: bool = Field(False, title="torch.compile", description="fuse elementwise kernels (fewer launches)")
    framework: Framework = Field(
        Framework.hf_trainer, title="Framework", description="sets the framework's documented defaults"
    )
    tensor_parallel: int = Field(1, ge=1, le=64, title="Tensor parallel", description="GPUs sharing each layer")
    pipeline_parallel: int = Field(1, ge=1, le=512, title="Pipeline parallel", description="pipeline stages")
    pipeline_virtual_stages: int = Field(
        1, ge=1, le=64, title="Virtual stages", description="interleaved model chunks per pipeline GPU"
    )
    pipeline_first_stage_layers: int | None = Field(None, ge=1, le=100_000, title="First stage layers",
        exclude_if=left_out, description="layers of the first pipeline stage (Megatron-LM's "
        "--decoder-first-pipeline-num-layers); the middle stages split the rest evenly")
    pipeline_last_stage_layers: int | None = Field(None, ge=1, le=100_000, title="Last stage layers",
        exclude_if=left_out, description="layers of the last pipeline stage (--decoder-last-pipeline-num-layers)")
    context_parallel: int = Field(1, ge=1, le=512, title="Context parallel", description="GPUs sharing a sequence")
    sequence_parallel: bool = Field(
        False, title="Sequence parallel", description="shard norms and dropout along the sequence (needs tp > 1)"
    )
    expert_parallel: int = Field(1, ge=1, le=1024, title="Expert parallel", description="GPUs sharing the experts")

    @property
    def checkpointing(self) -> Checkpointing:
        """The recomputation regime: 'none', 'selective' (attention core only) or 'full' (every layer)."""
        if self.gradient_checkpointing == "selective":
            return "selective"
        return "full" if self.gradient_checkpointing else "none"

    def checkpointed_fraction(self, layers: int) -> float:
        """Share of the blocks that recompute their forward: 1 under true, 0 under false or selective, ⌊L/k⌋ of L
        with checkpoint_every_k_blocks k (torchtitan wraps the blocks whose 1-based count % k == 0)."""
        k = self.checkpoint_every_k_blocks or 1
        return 0.0 if self.checkpointing != "full" else (layers // k) / layers if layers > 0 else 1.0

    @property
    def model_parallel(self) -> int:
        """GPUs one model replica spans: tensor × pipeline × context parallel (dp = GPUs ÷ this)."""
        return self.tensor_parallel * self.pipeline_parallel * self.context_parallel

    @model_validator(mode="after")
    def _coherent(self) -> TrainingSpec:
        if self.method is Method.full and self.lora_rank is not None:
            raise ValueError("training.lora_rank is only allowed with method lora or qlora (method is full)")
        if self.method is not Method.full and self.lora_rank is None:
            self.lora_rank = 16
            self.__pydantic_fields_set__.discard("lora_rank")  # the default, not the user's choice: saved unset
        if self.offload is not Offload.none and self.sharding is Sharding.none:
            raise ValueError("training.offload needs sharding zero1, zero2, zero3, fsdp or hsdp (sharding is none)")
        if self.offload is Offload.optimizer_and_params and self.sharding in (Sharding.zero1, Sharding.zero2):
            raise ValueError("training.offload optimizer_and_params needs sharding zero3, fsdp or hsdp")
        if self.global_batch_size is not None and self.global_batch_size < self.micro_batch_size:
            raise ValueError("training.global_batch_size must be at least training.micro_batch_size")
        if isinstance(self.lora_targets, list) and not self.lora_targets:
            raise ValueError("training.lora_targets is an empty list; name modules such as [\"q_proj\", \"v_proj\"]")
        if self.method is not Method.full:
            target_set(self.lora_targets)  # one sentence naming the unknown module and what is allowed
        if self.sequence_parallel and self.tensor_parallel == 1:
            raise ValueError("training.sequence_parallel needs training.tensor_parallel of 2 or more")
        if self.activation_offload and self.checkpointing != "full":
            raise ValueError(
                "training.activation_offload needs gradient_checkpointing true: it moves the checkpointed layer "
                f"inputs to host memory (gradient_checkpointing is {str(self.gradient_checkpointing).lower()})"
            )
        if self.pipeline_virtual_stages > 1 and self.pipeline_parallel == 1:
            raise ValueError("training.pipeline_virtual_stages needs training.pipeline_parallel of 2 or more")
        if self.checkpoint_every_k_blocks is not None and self.gradient_checkpointing is not True:
            raise ValueError("training.checkpoint_every_k_blocks needs gradient_checkpointing true: it picks the "
                             f"blocks that recompute (it is {str(self.gradient_checkpointing).lower()})")
        if (self.checkpoint_every_k_blocks or 1) > 1 and self.activation_offload:
            raise ValueError("training.activation_offload needs every block checkpointed; leave out "
                             "training.checkpoint_every_k_blocks (or set it to 1)")
        check_target_parameters(self.lora_target_parameters, self.method.value, self.lora_dropout)
        return self


class HardwareSpec(_Strict, MeasuredHardware):
    gpu: str = Field(..., title="GPU", description="catalog GPU id, e.g. H100-SXM (case-insensitive)")
    gpus_per_node: int = Field(1, ge=1, le=64, title="GPUs per node")
    nodes: int = Field(1, ge=1, le=8192, title="Nodes")
    interconnect: Interconnect | None = Field(
        None, title="Inter-node network", description="default: what a typical node of this GPU class has"
    )
    inter_node_gbps: Annotated[float | None, within(0, 100_000, "more than 0 and at most 100,000 Gbit/s per node",
                                                    low_open=True)] = Field(
        None, gt=0, title="Inter-node bandwidth", description="Gbit/s per node (default from the network type)"
    )
    intra_node_busbw_gbs: Annotated[float | None, within(0, 10_000, "more than 0 and at most 10,000 GB/s",
                                                         low_open=True)] = Field(
        None, gt=0, title="Measured intra-node busbw", description="GB/s, e.g. from an NCCL all-reduce probe"
    )
    matmul_tflops: Annotated[float | None, within(0, 100_000, "more than 0 and at most 100,000 TFLOP/s",
                                                  low_open=True)] = Field(
        None, gt=0, title="Measured matmul TFLOP/s",
        description="achievable dense matmul TFLOP/s per GPU, e.g. from the probe's GPU matmul",
    )

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


class PricingSpec(_Strict):
    provider: str | None = Field(None, title="Provider", description="e.g. aws, lambda, runpod (cheapest if empty)")
    mode: PricingMode = Field(PricingMode.on_demand, title="Pricing mode")
    usd_per_gpu_hour: Annotated[float | None, within(0.01, 1000, "$0.01 to $1,000 per GPU-hour")] = Field(
        None, title="Price override", description="USD per GPU-hour"
    )
    discount: float = Field(0.0, ge=0, lt=1, title="Discount", description="negotiated discount, 0–1")
    allow: Annotated[list[Allowance], BeforeValidator(allowance_list)] = Field(
        default_factory=list, title="Also price",
        description="marketplace (community/peer hosts, on-demand plans) and auction (bid floors, spot plans): "
        "used only when named here",
    )


class SearchSpec(_Strict):
    objective: Literal["cost", "time", "cost_under_deadline"] = Field("cost", title="Rank by")
    deadline_hours: Annotated[float | None, within(0, TEN_YEARS_HOURS, "more than 0 and at most 87,660 hours "
                                                   "(10 years)", low_open=True)] = Field(
        None, gt=0, title="Deadline (hours)"
    )
    max_gpus: int = Field(512, ge=1, le=65536, title="Most GPUs")
    longest_hours: Annotated[float | None, within(0, TEN_YEARS_HOURS, "more than 0 and at most 87,660 hours "
                                                  "(10 years)", low_open=True)] = Field(
        720.0, title="Longest run (hours)",
        description="plans longer than this are ranked only when nothing shorter fits (default 30 days)",
    )
    gpus: list[str] | None = Field(None, title="GPUs to consider (default: all with a price)")


class BuySpec(_Strict):
    """Owning instead of renting; defaults from REFERENCES.md (Epoch, Uptime Institute)."""

    capex_usd_per_gpu: Annotated[float | None, within(0, 10_000_000, "more than $0 and at most $10,000,000 per GPU",
                                                      low_open=True)] = Field(
        None, gt=0, title="Price per GPU incl. server share"
    )
    years: float = Field(3.0, gt=0, le=10, title="Depreciation (years)")
    residual_fraction: float = Field(0.30, ge=0, lt=1, title="Residual value")
    kw_per_gpu: float = Field(1.275, gt=0, le=100, title="kW per GPU incl. host (10.2 kW / 8 for HGX H100)")
    load_fraction: float = Field(0.8, gt=0, le=1, title="Average power draw vs peak")
    pue: float = Field(1.56, ge=1, le=3, title="PUE")
    usd_per_kwh: float = Field(0.10, ge=0, le=10, title="Electricity USD/kWh")
    colo_usd_per_kw_month: float = Field(200.0, ge=0, le=100_000, title="Colocation USD per kW-month")
    ops_usd_per_gpu_year: float = Field(0.0, ge=0, le=10_000_000, title="Operations USD per GPU-year")
    utilization: float = Field(0.6, gt=0, le=1, title="Utilisation")


class Assumptions(_Strict):
    mfu: Annotated[float | None, within(0.01, 1, "0.01 to 1 (1% to 100% of the GPU's peak)")] = Field(
        None, title="MFU", description="override the default model FLOPs utilisation"
    )
    gpu_mtbf_hours: Annotated[float, within(0, 1e9, "more than 0 and at most 1e9 GPU-hours", low_open=True)] = Field(
        50_700.0,
        gt=0,
        title="GPU MTBF (h)",
        description="GPU-hours per job-killing failure per GPU (Llama 3: 16,384 H100, one every ~3.1 h)",
    )
    spot_preemptions_per_hour: Annotated[float, within(0, 60, "0 to 60 per hour")] = Field(
        0.05, ge=0, title="Spot preemptions per hour"
    )
    restart_minutes: Annotated[float, within(0, 10_080, "0 to 10,080 minutes (a week)")] = Field(
        10.0, ge=0, title="Restart time (min)", description="requeue, load, warm-up"
    )
    eval_every_steps: Annotated[int, within(0, 10**9, "0 (no evaluation) to 1e9 steps")] = Field(
        0, ge=0, title="Evaluate every (steps)", description="0: no evaluation passes during training"
    )
    eval_tokens: Annotated[float, within(0, 1e12, "0 to 1e12 tokens")] = Field(
        0.0, ge=0, title="Tokens per evaluation", description="tokens one evaluation pass reads (forward only)"
    )
    checkpoint_tier: StorageTier = Field(StorageTier.local_nvme, title="Checkpoint storage")
    data_tier: StorageTier = Field(StorageTier.object, title="Dataset storage")
    checkpoints_kept: int = Field(2, ge=1, le=1000, title="Hot checkpoints kept")
    archive_final_checkpoint: bool = Field(True, title="Archive the final checkpoint to object storage")
    idle_hours: Annotated[float, within(0, TEN_YEARS_HOURS, "0 to 87,660 hours (10 years)")] = Field(
        0.0, ge=0, title="Idle hours (stopped instances, disks kept)"
    )
    egress_gb: Annotated[float, within(0, 1e9, "0 to 1e9 GB (an exabyte)")] = Field(
        0.0, ge=0, title="Egress (GB)", description="e.g. downloading the final weights"
    )
    storage_months: Annotated[float, within(0, 120, "0 to 120 months (10 years)")] = Field(
        1.0, ge=0, title="Months of storage billed"
    )
    zero_accounting: Literal["deepspeed", "paper"] = Field(
        "deepspeed",
        title="ZeRO accounting",
        description="deepspeed: DeepSpeed's buffers (fp32 grad partition); paper: the ZeRO paper's K=12 model",
    )
    comm_overlap: float = Field(0.7, ge=0, le=1, title="Comm/compute overlap")
    buy: BuySpec = Field(default_factory=BuySpec)


class LaunchSpec(_Strict):
    """How the launch files submit the run: settings of the cluster it runs on, not of the plan's figures."""

    kueue_queue: Annotated[str | None, dns_label("launch.kueue_queue")] = Field(
        None, title="Kueue queue", exclude_if=left_out,
        description="the LocalQueue the Kubernetes job is submitted to (kueue.x-k8s.io/queue-name); none: no queue")
    kubernetes_job: Literal["trainjob_and_jobset", "pytorchjob"] = Field(
        "trainjob_and_jobset", title="Kubernetes job",
        description="the operator's object the kubernetes format writes: Kubeflow Trainer's TrainJob and a JobSet, "
                    "or Kubeflow's older PyTorchJob")


class PlanRequest(_Strict):
    schema_: str | None = Field(None, alias="$schema", exclude=True, title="JSON Schema", description="for editors")
    model: ModelSpec
    data: DataSpec
    training: TrainingSpec = Field(default_factory=TrainingSpec)
    hardware: HardwareSpec | None = None
    pricing: PricingSpec = Field(default_factory=PricingSpec)
    search: SearchSpec = Field(default_factory=SearchSpec)
    assumptions: Assumptions = Field(default_factory=Assumptions)
    launch: LaunchSpec | None = Field(None, title="Launch", exclude_if=left_out,
                                      description="cluster settings for the launch files (Kubernetes job, Kueue queue)")


# --------------------------------------------------------------------------- result


class MemoryBreakdown(BaseModel):
    weights: int
    gradients: int
    optimizer: int
    activations: int
    logits: int
    overhead: int
    total: int


class MemoryResult(BaseModel):
    per_gpu: MemoryBreakdown
    gpu_memory: int
    fits: bool
    cpu_ram_needed: int
    measure: Literal["reserved", "allocated"] = "reserved"
    allocated_peak: int = Field(..., description="peak of torch.cuda.max_memory_allocated (no context, no reserve)")
    max_micro_batch: int = Field(..., description="largest micro-batch that fits at this seq_len (0: none)")
    max_seq_len: int = Field(..., description="longest sequence that fits at micro-batch 1 (0: none)")
    short_bytes: int = Field(0, description="bytes per GPU beyond the GPU's memory (0: it fits)")
    suggestions: list[str] = Field(default_factory=list, description="what would make it fit (empty when it fits)")


class StepBreakdown(BaseModel):
    """Seconds of one optimizer step by kind of work, per GPU; they add up to `step_time_s`."""
    gemm: float = 0.0
    attention: float = 0.0
    memory_bound: float = 0.0
    optimizer: float = 0.0
    host_transfer: float = 0.0
    exposed_comm: float = 0.0
    bubble: float = 0.0


class Band(BaseModel):
    """A planned figure's likely range: the estimate scaled by its regime's calibration residuals' spread."""

    low: float
    high: float
    coverage: float = Field(..., description="the share of held-out published runs of this regime inside their band")
    regime: str = Field(..., description="the calibration regime the band is taken from (framework, method, scale)")
    cases: int = Field(..., description="published runs behind the band's width")
    sources: int = Field(0, description="publishers behind the band and its coverage (leave-one-source-out)")


class ComputeResult(StepSource):
    params_total: int
    params_active: int
    params_trainable: int
    flops_per_token: float = Field(..., description="hardware FLOPs per trained token, including recomputation")
    model_flops_per_token: float = Field(0.0, description="6N + causal attention (PaLM), no recomputation")
    total_flops: float
    tokens_per_second: float
    mfu: float = Field(..., description="achieved model-FLOPs utilisation after every cost of the step")
    hfu: float = Field(0.0, description="achieved hardware-FLOPs utilisation (recomputation counted)")
    achieved_tflops_per_gpu: float = Field(..., description="hardware FLOP/s per GPU over the whole step")
    step_time_s: float
    comm_time_s: float
    scaling_efficiency: float
    steps: int
    tokens_per_step: int
    step_breakdown_s: StepBreakdown = Field(default_factory=StepBreakdown)
    tokens_per_second_range: Band | None = Field(None, description="likely tokens/s (low-high), from calibration")


class TimeBreakdown(BaseModel):
    """Seconds of the wall time by what fills them; they add up to `hours` × 3600."""

    steps: float = Field(0.0, description="the training steps")
    start_up: float = Field(0.0, description="the first start: requeue, model load, warm-up (restart_minutes)")
    evaluation: float = Field(0.0, description="evaluation passes (eval_every_steps × eval_tokens, forward only)")
    checkpoint_writes: float = Field(0.0, description="checkpoint writes at the planned interval")
    failures: float = Field(0.0, description="expected restarts and lost work after failures or preemptions")


class TimeResult(BaseModel):
    hours: float
    gpu_hours: float
    hours_range: Band | None = Field(None, description="likely wall hours (low-high), from calibration residuals")
    breakdown_s: TimeBreakdown = Field(default_factory=TimeBreakdown)


class CheckpointResult(BaseModel):
    size_bytes: int
    write_seconds: float
    interval_minutes: float
    interval_young_minutes: float
    job_mtbf_hours: float
    expected_failures: float
    overhead_fraction: float


class StorageResult(BaseModel):
    dataset_raw_bytes: int
    dataset_tokenized_bytes: int
    read_bytes_per_s_needed: float
    tier_read_bytes_per_s: float
    unpacked_requests: int
    packed_requests: int
    unpacked_request_usd: float | None
    packed_request_usd: float | None


class Cited(Protocol):
    """Anything priced from a dated, sourced figure (a catalog price row)."""
    @property
    def source(self) -> str | None: ...

    @property
    def date(self) -> str | None: ...


class CostLine(BaseModel):
    item: str
    usd: float | None
    detail: str
    source: str | None = None
    date: str | None = None

    @classmethod
    def cited(cls, item: str, usd: float | None, detail: str, row: Cited | None) -> CostLine:
        """A line that cites the figure it was priced from (no source when no row had a price)."""
        return cls(item=item, usd=usd, detail=detail, source=row.source if row else None,
                   date=row.date if row else None)


class ComputeCost(BaseModel):
    on_demand: float | None
    spot: float | None
    reserved: float | None


class BuyVsRent(BaseModel):
    usd_per_gpu_hour_owned: float
    usd_per_gpu_hour_rented: float | None
    break_even_utilization: float | None


class CostResult(BaseModel):
    provider: str | None
    price_date: str | None
    price_source: str | None
    instance: str | None = Field(None, description="the instance type the chosen mode's price is for")
    region: str | None = Field(None, description="the region that price is for ('any': the same in every region)")
    pricing_model: str | None = Field(None, description="on_demand, spot, reserved, marketplace or auction")
    confidence: str | None = Field(None, description="the price record's confidence: normal or low")
    billed_gpus_per_node: int | None = Field(
        None, description="GPUs paid for per node: the smallest instance of the offer that holds the node")
    billed_gpu_hours: float | None = Field(None, description="hours × nodes × billed GPUs per node (chosen mode)")
    billing: str = Field("", description="why it pays for more GPUs than it uses, or ''")
    usd_per_gpu_hour: ComputeCost
    compute_usd: ComputeCost
    spot_expected_lost_hours: float | None
    storage_usd: float | None = Field(description="storage lines' sum; null for a plan that cannot run")
    egress_usd: float | None = Field(description="data out; null for a plan that cannot run")
    idle_usd: float | None = Field(description="stopped disks; null for a plan that cannot run")
    total_usd: float | None
    total_usd_range: Band | None = Field(None, description="the total cost at the ends of the hours' band")
    unpriced_reason: str | None = Field(None, description="why compute_usd and total_usd are null: it does not fit")
    items: list[CostLine]
    buy_vs_rent: BuyVsRent | None

    def side_usd(self) -> float:
        """Storage, egress and idle disks together: what every pricing mode adds to its compute (0 when unpriced)."""
        return (self.storage_usd or 0.0) + (self.egress_usd or 0.0) + (self.idle_usd or 0.0)


class Candidate(BaseModel):
    gpu: str
    gpus_per_node: int
    nodes: int
    sharding: Sharding
    method: Method
    gradient_checkpointing: bool | Literal["selective"]
    micro_batch_size: int
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    fits: bool
    memory_per_gpu: int
    hours: float
    cost_usd: float | None
    provider: str | None
    pareto: bool
    why: str
    instance: str | None = Field(None, description="the instance type the node is priced from")
    billed_gpus: int | None = Field(None, description="GPUs paid for per node (≥ gpus_per_node)")
    variants: list[Sharding] = Field(default_factory=list, description="other shardings with the same outcome")


class Assumption(BaseModel):
    name: str
    value: str
    source: str
    date: str | None = None


SanityKind = Literal["does_not_fit", "price_outlier", "not_rentable", "low_headroom", "long_run", "huge_cost",
                     "cost_range", "stale_price", "undated_price"]


class SanityWarning(BaseModel):
    """One finding of the sanity layer (core.planner.money.sanity): what kind, one sentence, the figure it is about."""

    kind: SanityKind
    message: str
    figure: float | None = None


class PlanResult(BaseModel):
    request: PlanRequest
    model_name: str
    hardware: HardwareSpec
    memory: MemoryResult
    compute: ComputeResult
    time: TimeResult
    checkpoint: CheckpointResult
    storage: StorageResult
    cost: CostResult
    candidates: list[Candidate] = Field(default_factory=list)
    assumptions: list[Assumption] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    sanity: list[SanityWarning] = Field(default_factory=list)
