"""Which keys each layer's attention reads, read from config.json, and how many keys a query
averages.

Models mix layer kinds: Gemma 2 alternates a 4096-token sliding window with global layers, Gemma 3
runs five local layers per global one, gpt-oss alternates 128-token windows with full attention,
Llama 4 runs chunked attention (8192-token chunks) with every fourth layer global and without RoPE,
Mistral v0.1 and Phi-3 window every layer. Attention FLOPs (and the time of the attention kernels)
scale with the keys each query reads, so one window applied to every layer, or none, misprices all
of these. The pattern is read the way transformers reads it (its configuration_*.py files):

- ``layer_types`` (a list of ``full_attention`` / ``sliding_attention`` / ``chunked_attention``)
  wins when given;
- Gemma 3 (``gemma3``, ``gemma3_text``) and Cohere 2: ``sliding_window_pattern`` p (default 6 and
  4): layer i slides when (i + 1) % p != 0 (configuration_gemma3.py ``_sliding_window_pattern``);
- Gemma 2: layer i slides when (i + 1) % 2 != 0 (configuration_gemma2.py ``layer_types`` default);
- Llama 4: ``no_rope_layers`` (1 = RoPE, 0 = NoPE; default every ``no_rope_layer_interval`` = 4th
  layer NoPE); RoPE layers are ``chunked_attention`` of ``attention_chunk_size``, NoPE layers full
  (configuration_llama4.py: ``"chunked_attention" if no_rope else "full_attention"``);
- Qwen 2/3 with ``use_sliding_window``: layers from ``max_window_layers`` on slide
  (configuration_qwen2.py);
- otherwise a ``sliding_window`` (unless ``use_sliding_window`` is false) windows every layer
  (Mistral, Phi-3).

SmolLM3's ``no_rope_layers`` only drop RoPE from every fourth layer: its attention is full
everywhere, so its FLOPs do not change (the rotary elementwise pass is not modelled per layer).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

FULL, SLIDING, CHUNKED = "full", "sliding", "chunked"
# One layer's attention: (kind, window or chunk size; 0 for full attention).
LayerAttention = tuple[str, int]
_TYPE_NAMES = {"full_attention": FULL, "sliding_attention": SLIDING, "chunked_attention": CHUNKED}
_PATTERN_DEFAULT = {"gemma3": 6, "gemma3_text": 6, "cohere2": 4}

Num = Any


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return int(value)


def layer_pattern(
    cfg: Mapping[str, Any], model_type: str, layers: int
) -> tuple[LayerAttention, ...]:
    """Each layer's (kind, size) from config.json keys; raises ValueError naming a key that does not
    fit."""
    window = (
        _positive(cfg.get("sliding_window"))
        if cfg.get("use_sliding_window", True) is not False
        else None
    )
    chunk = _positive(cfg.get("attention_chunk_size"))
    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, Sequence) or isinstance(types, str) or len(types) != layers:
            raise ValueError(
                f"config.json key layer_types must list one type per layer ({layers} layers)"
            )
        unknown = sorted({str(t) for t in types} - set(_TYPE_NAMES))
        if unknown:
            raise ValueError(
                f"config.json layer_types has {unknown[0]!r} layers, which the planner does not "
                f"model (it models {', '.join(sorted(_TYPE_NAMES))})"
            )
        kinds = [_TYPE_NAMES[str(t)] for t in types]
    elif model_type in _PATTERN_DEFAULT or (model_type == "gemma2"):
        every = (
            2
            if model_type == "gemma2"
            else (_positive(cfg.get("sliding_window_pattern")) or _PATTERN_DEFAULT[model_type])
        )
        kinds = [SLIDING if (i + 1) % every else FULL for i in range(layers)]
    elif model_type in ("llama4", "llama4_text") and chunk:
        every = _positive(cfg.get("no_rope_layer_interval")) or 4
        rope = cfg.get("no_rope_layers") or [int((i + 1) % every != 0) for i in range(layers)]
        if not isinstance(rope, Sequence) or isinstance(rope, str) or len(rope) != layers:
            raise ValueError(
                f"config.json key no_rope_layers must list one flag per layer ({layers} layers)"
            )
        kinds = [CHUNKED if flag else FULL for flag in rope]
    elif model_type.startswith("qwen") and window and cfg.get("use_sliding_window") is True:
        first = _positive(cfg.get("max_window_layers")) or 0
        kinds = [SLIDING if i >= first else FULL for i in range(layers)]
    else:
        kinds = [SLIDING if window else FULL] * layers
    out: list[LayerAttention] = []
    for kind in kinds:
        size = window if kind == SLIDING else chunk if kind == CHUNKED else 0
        if size is None:
            key = "sliding_window" if kind == SLIDING else "attention_chunk_size"
            raise ValueError(f"config.json has {kind} attention layers but no positive {key}")
        out.append((FULL, 0) if kind == FULL else (kind, size))
    return tuple(out)


def layer_span(kind: str, size: int, seq_len: Num) -> Num:
    """Full-causal-equivalent span of one layer: 2 × the keys a query reads on average (s for full
    attention).

    Query i (1-based) of a sequence of s reads n_i keys: full causal n_i = i; a sliding window w
    (keys i−w+1..i, transformers' sliding mask) n_i = min(i, w); chunked attention of c (Llama 4:
    the keys of its own chunk up to itself) n_i = ((i − 1) mod c) + 1. The exact means, for w < s
    and s = q·c + r (0 ≤ r < c):

        full      (1/s)·Σ i                           = (s + 1)/2
        sliding   (1/s)·[w(w+1)/2 + (s − w)·w]          = w − w²/(2s) + w/(2s)
        chunked   (1/s)·[q·c(c+1)/2 + r(r+1)/2]         = (q·c² + r²)/(2s) + 1/2

    The project counts causal attention as s/2 keys (FlashAttention-2 §4.1 halves the 4·s²·d·a FLOPs
    for the mask; kernels.causal_attention_flops): the area of the attended region of the (query,
    key) square, which drops the half-masked diagonal. The same area for every kind keeps one
    convention:

        full s/2,   sliding w − w²/(2s),   chunked (q·c² + r²)/(2s)

    each within half a key of the exact mean, and equal to s/2 when w ≥ s or c ≥ s. The span
    returned is 2·k̄, so every "causal over s" formula takes it in place of s.
    """
    s = np.asarray(seq_len, dtype=float)
    if kind == FULL:
        span = s
    elif kind == SLIDING:
        span = np.where(s > size, 2.0 * size - size * size / np.maximum(s, 1.0), s)
    elif kind == CHUNKED:
        q = np.floor(s / size)
        r = s - q * size
        span = (q * size * size + r * r) / np.maximum(s, 1.0)
    else:
        raise ValueError(f"unknown attention kind {kind!r}")
    return span if np.ndim(seq_len) else float(span)


def mean_span(pattern: Sequence[LayerAttention], seq_len: Num) -> Num:
    """The layers' average full-causal-equivalent span (see layer_span), vectorised over seq_len."""
    groups = Counter(pattern)
    total = sum(count * layer_span(kind, size, seq_len) for (kind, size), count in groups.items())
    return total / len(pattern)
