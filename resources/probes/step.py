"""One decoder layer of the planned model, timed forward + backward + optimizer step on this host.

Runs with the host's own Python and torch only (no transformers): the layer is built in plain
PyTorch from the shapes the client sends (hidden, heads, KV heads, head dim, intermediate,
activation, norm, MoE experts and top-k, LoRA adapters of the plan's rank and targets, gradient
checkpointing), attention through scaled_dot_product_attention, at the plan's micro-batch x sequence
length.
  step.py measure --spec JSON     time the layer, its attention core, its GEMMs, the output layer +
  loss step.py count --spec JSON       parameters and FLOPs of one forward + backward, on the meta
  device (no compute)
Prints one JSON object per line with an "event" key: "backend", "rep" (one timed repetition),
"result", "skipped" (cannot be measured here, with the reason), "error" (one sentence), "done". On
CUDA the times come from CUDA events and the memory from max_memory_allocated / max_memory_reserved;
on the CPU from perf_counter, in float32, and the memory is not measured. spec["scale"] divides the
widths, the vocabulary and the sequence length (heads keep their head dim) so a CPU finishes in
seconds; it is reported.
"""

import argparse
import json
import os
import platform
import sys
import time


def emit(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def fail(message, code=2):
    emit(event="error", message=message)
    sys.exit(code)


try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except Exception as exc:  # the client checks for torch first; this is the last word if it vanished
    emit(event="skipped", reason=f"torch cannot be imported: {exc!r}"[:300])
    sys.exit(0)


def scaled(spec):
    """The spec with widths, vocabulary and sequence divided by spec["scale"] (heads keep their head
    dim)."""
    s = max(int(spec.get("scale") or 1), 1)
    out = dict(spec)
    if s == 1:
        return out
    heads = max(spec["heads"] // s, 1)
    group = max(spec["heads"] // max(spec["kv_heads"], 1), 1)
    out["heads"] = heads
    out["kv_heads"] = max(heads // group, 1)
    out["hidden"] = max(spec["hidden"] // s, 8)
    for key in ("intermediate", "expert_intermediate", "shared_intermediate"):
        if spec.get(key):
            out[key] = max(spec[key] // s, 8)
    out["vocab"] = max(spec["vocab"] // s, 16)
    out["seq_len"] = max(spec["seq_len"] // s, 16)
    return out


# ------------------------------------------------------------------------------------------------
# layer


class LoRALinear(nn.Module):
    """A frozen base weight plus a trainable low-rank update B·A (PEFT's LoRA, dropout 0)."""

    def __init__(self, base, rank, alpha):
        super().__init__()
        self.base = base
        self.base.weight.requires_grad_(False)
        if self.base.bias is not None:
            self.base.bias.requires_grad_(False)
        device = base.weight.device
        self.lora_a = nn.Linear(base.in_features, rank, bias=False, device=device)
        self.lora_b = nn.Linear(rank, base.out_features, bias=False, device=device)
        if device.type != "meta":
            # non-zero, so every gradient is a real product
            nn.init.normal_(self.lora_b.weight, std=1e-3)
        self.scaling = alpha / rank

    def forward(self, x):
        return self.base(x) + self.lora_b(self.lora_a(x)) * self.scaling


def linear(spec, kind, d_in, d_out, device, dtype, bias=False):
    """nn.Linear (NF4 through bitsandbytes for QLoRA), wrapped with LoRA when `kind` is an adapter
    target."""
    if spec["method"] == "qlora":
        import bitsandbytes as bnb  # checked by the caller

        base = bnb.nn.Linear4bit(d_in, d_out, bias=bias, compute_dtype=dtype, quant_type="nf4").to(
            device
        )
    else:
        base = nn.Linear(d_in, d_out, bias=bias, device=device, dtype=dtype)
    if spec["method"] == "full":
        return base
    if kind in spec.get("lora_targets", ()):
        return LoRALinear(
            base, int(spec["lora_rank"]), float(spec.get("lora_alpha") or 2 * spec["lora_rank"])
        )
    for p in base.parameters():
        p.requires_grad_(False)
    return base


def norm(spec, device, dtype):
    if spec.get("layer_norm"):
        return nn.LayerNorm(spec["hidden"], device=device, dtype=dtype)
    if hasattr(nn, "RMSNorm"):
        return nn.RMSNorm(spec["hidden"], eps=1e-5, device=device, dtype=dtype)
    return nn.LayerNorm(spec["hidden"], bias=False, device=device, dtype=dtype)


ACTIVATIONS = {
    "silu": F.silu,
    "swiglu": F.silu,
    "gelu": F.gelu,
    "geglu": F.gelu,
    "relu": F.relu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


class Mlp(nn.Module):
    def __init__(self, spec, width, device, dtype, trained=True):
        super().__init__()
        self.gated = bool(spec.get("gated", True))
        self.act = ACTIVATIONS.get(spec.get("activation") or "silu", F.silu)
        hidden = spec["hidden"]
        make = (
            linear
            if trained
            else (lambda s, k, i, o, d, t: nn.Linear(i, o, bias=False, device=d, dtype=t))
        )
        self.up = make(spec, "up", hidden, width, device, dtype)
        self.gate = make(spec, "gate", hidden, width, device, dtype) if self.gated else None
        self.down = make(spec, "down", width, hidden, device, dtype)

    def forward(self, x):
        h = self.act(self.gate(x)) * self.up(x) if self.gated else self.act(self.up(x))
        return self.down(h)


class Moe(nn.Module):
    """Router, top-k routed experts (each an Mlp over the tokens routed to it) and the shared
    experts."""

    def __init__(self, spec, device, dtype):
        super().__init__()
        self.top_k = int(spec["top_k"])
        self.router = nn.Linear(
            spec["hidden"], spec["experts"], bias=False, device=device, dtype=dtype
        )
        if spec["method"] != "full":
            self.router.weight.requires_grad_(False)
        self.experts = nn.ModuleList(
            Mlp(spec, spec["expert_intermediate"], device, dtype) for _ in range(spec["experts"])
        )
        shared = spec.get("shared_intermediate") or 0
        self.shared = Mlp(spec, shared, device, dtype) if shared else None

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        weights, chosen = torch.topk(
            torch.softmax(self.router(flat).float(), dim=-1), self.top_k, dim=-1
        )
        weights = (weights / weights.sum(-1, keepdim=True)).to(flat.dtype)
        out = torch.zeros_like(flat)
        for index, expert in enumerate(self.experts):
            rows, slot = torch.nonzero(chosen == index, as_tuple=True)
            if flat.device.type != "meta" and rows.numel() == 0:
                continue
            out = out.index_add(0, rows, expert(flat[rows]) * weights[rows, slot].unsqueeze(-1))
        if self.shared is not None:
            out = out + self.shared(flat)
        return out.reshape(x.shape)


def attention_core(q, k, v, group):
    """Causal SDPA; grouped KV heads are repeated to the query heads as transformers' repeat_kv
    does."""
    if group > 1:
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Layer(nn.Module):
    def __init__(self, spec, device, dtype):
        super().__init__()
        h, heads, kv, d = spec["hidden"], spec["heads"], spec["kv_heads"], spec["head_dim"]
        dv = spec.get("v_head_dim") or d
        bias = bool(spec.get("attention_bias"))
        self.heads, self.kv, self.d, self.dv = heads, kv, d, dv
        self.checkpointing = spec.get("checkpointing", "none")
        self.norm1 = norm(spec, device, dtype)
        self.norm2 = norm(spec, device, dtype)
        self.q = linear(spec, "q", h, heads * d, device, dtype, bias)
        self.k = linear(spec, "k", h, kv * d, device, dtype, bias)
        self.v = linear(spec, "v", h, kv * dv, device, dtype, bias)
        self.o = linear(spec, "o", heads * dv, h, device, dtype)
        self.mlp = (
            Moe(spec, device, dtype)
            if spec.get("experts")
            else Mlp(spec, spec["intermediate"], device, dtype)
        )
        if spec["method"] != "full":
            for module in (self.norm1, self.norm2):
                for p in module.parameters():
                    p.requires_grad_(False)

    def qkv(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.d).transpose(1, 2)
        k = self.k(x).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v(x).view(b, s, self.kv, self.dv).transpose(1, 2)
        return q, k, v

    def attend(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm1(x))
        group = self.heads // self.kv
        if self.checkpointing == "selective":
            a = torch.utils.checkpoint.checkpoint(
                attention_core, q, k, v, group, use_reentrant=False
            )
        else:
            a = attention_core(q, k, v, group)
        return self.o(a.transpose(1, 2).reshape(b, s, self.heads * self.dv))

    def block(self, x):
        x = x + self.attend(x)
        return x + self.mlp(self.norm2(x))

    def forward(self, x):
        if self.checkpointing == "full":
            return torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=False)
        return self.block(x)


class Head(nn.Module):
    """The final norm, the output layer at the plan's vocabulary and the cross-entropy loss."""

    def __init__(self, spec, device, dtype):
        super().__init__()
        self.norm = norm(spec, device, dtype)
        self.out = nn.Linear(spec["hidden"], spec["vocab"], bias=False, device=device, dtype=dtype)
        self.chunked = spec.get("cross_entropy", "standard") != "standard"
        if spec["method"] != "full":
            for p in self.parameters():
                p.requires_grad_(False)

    def loss(self, x, labels):
        return F.cross_entropy(self.out(self.norm(x)).float().flatten(0, 1), labels.flatten())

    def forward(self, x, labels):
        if not self.chunked:
            return self.loss(x, labels)
        total, chunks = 0.0, max(1, x.shape[1] // 1024)
        for xs, ls in zip(x.chunk(chunks, dim=1), labels.chunk(chunks, dim=1), strict=False):
            total = (
                total
                + torch.utils.checkpoint.checkpoint(self.loss, xs, ls, use_reentrant=False) / chunks
            )
        return total


# ------------------------------------------------------------------------------------------------
# timing


class Clock:
    """Seconds of a piece of work: CUDA events on a GPU (the queue's own time), perf_counter on the
    CPU."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def time(self, work):
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            work()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1000.0
        started = time.perf_counter()
        work()
        return time.perf_counter() - started


def trainable(module):
    return [p for p in module.parameters() if p.requires_grad]


def count(module):
    return sum(p.numel() for p in module.parameters()), sum(p.numel() for p in trainable(module))


def make_optimizer(spec, params):
    if not params:
        return None
    name = spec.get("optimizer", "adamw")
    if name.startswith("sgd"):
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9 if name == "sgd_momentum" else 0.0)
    # 8-bit and paged variants time as AdamW (said by the client)
    return torch.optim.AdamW(params, lr=1e-4)


def fwd_bwd(module, x, grad):
    """One forward and backward of a layer fed the previous layer's output (so its input gradient is
    computed)."""
    out = module(x)
    out.backward(grad)


def timed_reps(clock, work, warmup, reps, budget_s, label):
    """Warm-up runs, then up to `reps` timed ones within `budget_s`; each streamed as a "rep"
    event."""
    for _ in range(warmup):
        clock.time(work)
    times, started = [], time.monotonic()
    for index in range(reps):
        times.append(clock.time(work))
        emit(event="rep", part=label, index=index, seconds=round(times[-1], 6))
        if time.monotonic() - started > budget_s and len(times) >= 2:
            break
    return times


def stats(times):
    ordered = sorted(times)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return {
        "median_s": round(median, 6),
        "min_s": round(ordered[0], 6),
        "max_s": round(ordered[-1], 6),
        "spread": round((ordered[-1] - ordered[0]) / median, 4) if median > 0 else 0.0,
        "reps": len(times),
    }


def counted_flops(work):
    """FLOPs torch's own counter sees in one call of `work` (matmuls and attention), or None without
    it."""
    try:
        from torch.utils.flop_counter import FlopCounterMode
    except Exception:
        return None
    try:
        with FlopCounterMode(display=False) as counter:
            work()
    # e.g. a mixture of experts on the meta device: its routing depends on the values
    except Exception:
        return None
    return int(counter.get_total_flops())


# ------------------------------------------------------------------------------------------------
# modes


def device_and_dtype(spec, mode):
    if mode == "count":
        return torch.device("meta"), torch.bfloat16
    if spec.get("device") != "cpu" and torch.cuda.is_available():
        precision = spec.get("precision", "amp_bf16")
        if precision == "fp32":
            return torch.device("cuda", 0), torch.float32
        if precision == "amp_fp16" or not torch.cuda.is_bf16_supported():
            return torch.device("cuda", 0), torch.float16
        return torch.device("cuda", 0), torch.bfloat16
    return torch.device("cpu"), torch.float32


def inputs(spec, device, dtype):
    shape = (spec["micro_batch"], spec["seq_len"], spec["hidden"])
    x = torch.randn(shape, device=device, dtype=dtype, requires_grad=True)
    grad = torch.randn(shape, device=device, dtype=dtype)
    labels = torch.randint(0, spec["vocab"], shape[:2], device=device)
    return x, grad, labels


def cpu_fits(spec, budget_bytes):
    """A rough upper bound of one layer's bytes on the CPU in float32 (weights, grads, Adam,
    activations)."""
    h, inter = (
        spec["hidden"],
        max(
            spec.get("intermediate") or 0,
            (spec.get("expert_intermediate") or 0) * max(spec.get("experts") or 0, 1),
        ),
    )
    weights = 4 * h * h + 3 * h * inter
    tokens = spec["micro_batch"] * spec["seq_len"]
    activations = tokens * (16 * h + 4 * inter) + tokens * spec["vocab"] * 2
    need = 4 * (4 * weights + activations + h * spec["vocab"] * 4)
    return need <= budget_bytes, need


def available_bytes():
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except Exception:
        pass
    return 8 << 30


def shape_text(spec):
    moe = (
        ", {} experts top-{}".format(spec["experts"], spec["top_k"]) if spec.get("experts") else ""
    )
    return "hidden {}, {} heads ({} KV) x {}, intermediate {}{}, micro-batch {} x {} tokens".format(
        spec["hidden"],
        spec["heads"],
        spec["kv_heads"],
        spec["head_dim"],
        spec.get("intermediate"),
        moe,
        spec["micro_batch"],
        spec["seq_len"],
    )


def cmd_count(spec):
    """Parameters and counted FLOPs of the layer and the output layer, at the spec's shapes, on the
    meta device."""
    device, dtype = device_and_dtype(spec, "count")
    layer, head = Layer(spec, device, dtype), Head(spec, device, dtype)
    x, grad, labels = inputs(spec, device, dtype)
    layer_params, layer_trainable = count(layer)
    head_params, head_trainable = count(head)
    emit(
        event="result",
        device="meta",
        params_layer=layer_params,
        trainable_layer=layer_trainable,
        params_head=head_params,
        trainable_head=head_trainable,
        flops_layer=counted_flops(lambda: fwd_bwd(layer, x, grad)),
        flops_head=counted_flops(lambda: head(x, labels).backward()),
        spec=spec,
    )


def meta_flops(spec, dtype):
    """The layer's FLOPs counted on the meta device (same shapes, nothing allocated); QLoRA's are
    LoRA's, its dequantization being no matmul. None when the layer cannot be built there."""
    meta = torch.device("meta")
    try:
        layer = Layer(
            dict(spec, method="lora" if spec["method"] == "qlora" else spec["method"]), meta, dtype
        )
        x, grad, _ = inputs(spec, meta, dtype)
    except Exception:
        return None
    return counted_flops(lambda: fwd_bwd(layer, x, grad))


def part_timers(spec, layer, device, dtype):
    """Work items timing the attention core alone and the layer's linear modules alone, forward +
    backward, each forward run as often as the layer runs it (twice under full recomputation)."""
    b, s = spec["micro_batch"], spec["seq_len"]
    runs = 2 if spec.get("checkpointing") in ("full", "selective") else 1
    q = torch.randn(b, layer.heads, s, layer.d, device=device, dtype=dtype, requires_grad=True)
    k = torch.randn(b, layer.kv, s, layer.d, device=device, dtype=dtype, requires_grad=True)
    v = torch.randn(b, layer.kv, s, layer.dv, device=device, dtype=dtype, requires_grad=True)
    group = layer.heads // layer.kv

    def attention():
        for _ in range(runs - 1):
            with torch.no_grad():
                attention_core(q, k, v, group)
        attention_core(q, k, v, group).backward(
            torch.ones(b, layer.heads, s, layer.dv, device=device, dtype=dtype)
        )

    inner = set()
    for module in layer.modules():
        if isinstance(module, LoRALinear):
            inner |= {id(module.base), id(module.lora_a), id(module.lora_b)}
    linears = [
        m
        for m in layer.modules()
        if isinstance(m, LoRALinear) or (isinstance(m, nn.Linear) and id(m) not in inner)
    ]
    experts = {id(m) for e in getattr(layer.mlp, "experts", []) for m in e.modules()}
    routed = max(round(b * s * float(spec.get("top_k") or 1) / float(spec.get("experts") or 1)), 1)
    feeds = []
    for m in linears:
        width = m.base.in_features if isinstance(m, LoRALinear) else m.in_features
        rows = routed if id(m) in experts else b * s
        feeds.append((m, torch.randn(rows, width, device=device, dtype=dtype, requires_grad=True)))

    def gemms():
        for m, feed in feeds:
            for _ in range(runs - 1):
                with torch.no_grad():
                    m(feed)
            m(feed).sum().backward()

    return attention, gemms


def measure_parts(spec, clock, layer, device, dtype, budget):
    attention, gemms = part_timers(spec, layer, device, dtype)
    reps = max(2, int(spec.get("reps", 5)) // 2)
    return (
        stats(timed_reps(clock, attention, 1, reps, budget, "attention")),
        stats(timed_reps(clock, gemms, 1, reps, budget, "gemm")),
    )


def cmd_measure(spec):
    device, dtype = device_and_dtype(spec, "measure")
    method = spec["method"]
    if method == "qlora":
        if device.type != "cuda":
            emit(
                event="skipped",
                reason="QLoRA's NF4 weights need bitsandbytes on a CUDA GPU; this host has none",
            )
            return 0
        try:
            import bitsandbytes  # noqa: F401
        except Exception as exc:
            emit(
                event="skipped",
                reason=f"QLoRA needs bitsandbytes, which {sys.executable} cannot import "
                f"({type(exc).__name__})",
            )
            return 0
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    emit(
        event="backend",
        device=device.type,
        name=name,
        torch=torch.__version__,
        dtype=str(dtype)[6:],
        threads=torch.get_num_threads(),
        host=platform.node(),
    )
    if device.type == "cpu":
        budget = min(available_bytes() // 2, int(float(spec.get("max_memory_gb") or 4) * (1 << 30)))
        fits, need = cpu_fits(spec, budget)
        if not fits:
            fail(
                f"one layer of {shape_text(spec)} needs about {need / 1e9:.1f} GB on the CPU, "
                f"more than the {budget / 1e9:.1f} GB allowed here",
                3,
            )
    torch.manual_seed(1234)
    try:
        return run_measure(spec, device, dtype, name)
    except RuntimeError as exc:  # torch.cuda.OutOfMemoryError is a RuntimeError
        if "out of memory" not in str(exc).lower():
            raise
        total = (
            torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else 0
        )
        first = str(exc).splitlines()[0][:160]
        fail(
            f"one layer of {shape_text(spec)} does not fit in the {total / 1e9:.0f} GB of {name}: "
            f"{first}",
            3,
        )
    return 0


def run_measure(spec, device, dtype, name):
    """Mixed precision on a GPU as the plan trains: a full fine-tune keeps float32 weights under
    autocast, LoRA and QLoRA keep the frozen base in 16 bits and the adapters in float32; pure
    16-bit and fp32 plans, and the CPU, run in one dtype."""
    amp = device.type == "cuda" and str(spec.get("precision", "")).startswith("amp")
    weights = torch.float32 if amp and spec["method"] == "full" else dtype
    with torch.autocast(device_type=device.type, dtype=dtype, enabled=amp):
        return timed_layer(spec, device, dtype, weights, name)


def timed_layer(spec, device, dtype, weights, name):
    clock = Clock(device)
    budget = float(spec.get("max_seconds") or 60.0)
    warmup, reps = int(spec.get("warmup", 2)), int(spec.get("reps", 5))
    layer = Layer(spec, device, weights)
    head = Head(spec, device, weights)
    x, grad, labels = inputs(spec, device, dtype)
    params_layer, trainable_layer = count(layer)
    optimizer = make_optimizer(spec, trainable(layer))
    flops = counted_flops(lambda: fwd_bwd(layer, x, grad)) if device.type == "cpu" else None
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    layer_times = timed_reps(
        clock, lambda: fwd_bwd(layer, x, grad), warmup, reps, budget / 2, "layer"
    )
    peak = (
        (torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device))
        if device.type == "cuda"
        else (None, None)
    )
    opt_times = (
        timed_reps(clock, optimizer.step, 1, reps, budget / 8, "optimizer") if optimizer else [0.0]
    )
    head_times = timed_reps(clock, lambda: head(x, labels).backward(), 1, reps, budget / 8, "head")
    attention, gemm = measure_parts(spec, clock, layer, device, dtype, budget / 8)
    if flops is None:
        flops = meta_flops(spec, dtype)
    layer_stats = stats(layer_times)
    tflops = (
        flops / layer_stats["median_s"] / 1e12 if flops and layer_stats["median_s"] > 0 else None
    )
    emit(
        event="result",
        device=device.type,
        name=name,
        dtype=str(dtype)[6:],
        scale=int(spec.get("scale") or 1),
        shape=shape_text(spec),
        params_layer=params_layer,
        trainable_layer=trainable_layer,
        params_head=count(head)[0],
        flops_layer=flops,
        tflops=round(tflops, 4) if tflops else None,
        layer=layer_stats,
        layer_times=[round(t, 6) for t in layer_times],
        optimizer=stats(opt_times),
        head=stats(head_times),
        attention=attention,
        gemm=gemm,
        peak_allocated=peak[0],
        peak_reserved=peak[1],
        memory_source="max_memory_allocated / max_memory_reserved"
        if peak[0] is not None
        else "CPU: memory not measured",
    )
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=("measure", "count"))
    parser.add_argument("--spec", required=True, help="the layer's shapes and recipe as JSON")
    parser.add_argument(
        "--marker", default="", help="ignored; lets the caller find these processes"
    )
    args = parser.parse_args()
    try:
        spec = scaled(json.loads(args.spec))
    except (ValueError, KeyError, TypeError) as exc:
        fail(f"the layer spec is not valid: {exc}")
    threads = os.environ.get("TUNEPLAN_STEP_THREADS")
    if threads:
        torch.set_num_threads(max(1, int(threads)))
    if args.mode == "count":
        cmd_count(spec)
    else:
        code = cmd_measure(spec)
        if code:
            return code
    emit(event="done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
