"""`--format axolotl`: the config validated by axolotl's own pydantic schema
(AxolotlConfigWCapabilities).

Why not ``axolotl.utils.config.validate_config`` from an installed axolotl: axolotl 0.19 needs CUDA
builds (flash-attn, bitsandbytes, xformers, liger-kernel) and transformers/peft/trl at import. Its
schema, though, is a set of pydantic models (src/axolotl/utils/schemas/, axolotl-ai-cloud/axolotl
067b021) that ``validate_config`` calls with the machine's capabilities; this test loads those very
modules from tests/fixtures/launch/axolotl/schemas and gives their import-time helpers small
stand-ins (a logger, a process count, PIL's resampling enum, transformers' "is there an NPU" probe)
and answer as an install with no plugins (no plugin adapters, no per-architecture kernel table). The
models ignore unknown keys, so every key written must also be a field of the schema: a misspelt key
would otherwise pass in silence.
"""

from __future__ import annotations

import enum
import logging
import shutil
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from core.launch import LaunchError
from tests.core.launch_cases import CASES, IDS, Case, write

yaml = pytest.importorskip("yaml", reason="the launch extra brings PyYAML")
pytest.importorskip(
    "accelerate",
    reason="the launch extra (pip install -e '.[launch]') brings accelerate, which "
    "axolotl's schema imports",
)
SCHEMAS = Path(__file__).parents[1] / "fixtures/launch/axolotl/schemas"


def _stub(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


class _Resampling(enum.IntEnum):  # PIL.Image.Resampling's members (Pillow docs)
    NEAREST = 0
    LANCZOS = 1
    BILINEAR = 2
    BICUBIC = 3
    BOX = 4
    HAMMING = 5


class _NoPlugins:
    """axolotl.integrations.base.PluginManager with no plugin registered."""

    @classmethod
    def get_instance(cls) -> _NoPlugins:
        return cls()

    def supports_adapter(self, adapter: str) -> bool:
        return False


@pytest.fixture(scope="module")
def axolotl_schema(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("axolotl_src")
    target = root / "axolotl" / "utils" / "schemas"
    for src in SCHEMAS.rglob("*.py.txt"):
        dest = target / src.relative_to(SCHEMAS).with_suffix("")  # config.py.txt -> config.py
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dest)
    for pkg in (root / "axolotl", root / "axolotl" / "utils"):
        (pkg / "__init__.py").touch()
    stubs = {
        "axolotl.utils.logging": _stub("axolotl.utils.logging", get_logger=logging.getLogger),
        "axolotl.utils.datasets": _stub(
            "axolotl.utils.datasets", get_default_process_count=lambda: 1
        ),
        # No plugins and no per-architecture capability table: what a bare install without plugins
        # answers.
        "axolotl.model_support": _stub(
            "axolotl.model_support",
            Unsupported=type("Unsupported", (), {}),
            get_model_support=lambda model_type: None,
        ),
        "axolotl.integrations": _stub("axolotl.integrations"),
        "axolotl.integrations.base": _stub("axolotl.integrations.base", PluginManager=_NoPlugins),
        "PIL": _stub("PIL"),
        "PIL.Image": _stub("PIL.Image", Resampling=_Resampling),
        "transformers": _stub("transformers"),
        "transformers.utils": _stub("transformers.utils"),
        "transformers.utils.import_utils": _stub(
            "transformers.utils.import_utils", is_torch_npu_available=lambda: False
        ),
    }
    saved = {k: sys.modules.get(k) for k in stubs}
    sys.modules.update(stubs)
    sys.path.insert(0, str(root))
    try:
        from axolotl.utils.schemas.config import AxolotlConfigWCapabilities, AxolotlInputConfig

        yield AxolotlConfigWCapabilities, AxolotlInputConfig
    finally:
        sys.path.remove(str(root))
        for k in [m for m in sys.modules if m == "axolotl" or m.startswith("axolotl.")]:
            del sys.modules[k]
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def validate(schema: Any, cfg: dict[str, Any], case: Case) -> Any:
    with_caps, plain = schema
    unknown = set(cfg) - set(plain.model_fields)
    assert not unknown, f"keys axolotl does not know: {sorted(unknown)}"
    # H100 and A100-80GB both do bf16 (sm_90 / sm_80)
    capabilities = {
        "bf16": True,
        "fp8": False,
        "tf32": True,
        "n_gpu": case.world,
        "n_node": case.nodes,
        "compute_capability": "sm_90",
    }
    return with_caps.model_validate(
        {**cfg, "capabilities": capabilities, "env_capabilities": {"torch_version": "2.13.0"}}
    )


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-axolotl-067b021" for i in IDS])
def test_axolotl_validates_the_plan(axolotl_schema: Any, case: Case, tmp_path: Path) -> None:
    """axolotl's schema at 067b021 validates the file (the spot case included)."""
    written = write(case, "axolotl", tmp_path)
    cfg = yaml.safe_load((tmp_path / "axolotl_config.yaml").read_text())
    got = validate(axolotl_schema, cfg, case)
    assert got.micro_batch_size == case.micro
    assert got.gradient_accumulation_steps == case.accumulation
    assert got.sequence_len == 4096
    # checkpoints: the plan's kept count (2, the request default), resumed from output_dir
    assert got.save_total_limit == 2 and got.auto_resume_from_checkpoints is True
    assert got.save_steps >= 1 and got.output_dir == "/mnt/local_nvme/checkpoints"
    lora = case.request["training"]["method"] == "lora"
    assert (got.adapter == "lora") == lora
    if lora:
        assert got.lora_r == 16
    if case.stage in (1, 2, 3):  # ZeRO: the DeepSpeed file is written alongside and named
        assert got.deepspeed == "ds_config.json"
        assert {p.name for p in written.paths} == {
            "axolotl_config.yaml",
            "ds_config.json",
            "ds_config.README.md",
        }
    if case.stage is None:
        assert (
            got.fsdp_version == 2
            and got.fsdp_config.transformer_layer_cls_to_wrap == "LlamaDecoderLayer"
        )


def test_embed_tokens_is_written_as_a_lora_target(axolotl_schema: Any, tmp_path: Path) -> None:
    """PEFT adapts nn.Embedding (lora.Embedding): the planned embed_tokens target reaches
    lora_target_modules."""
    write(CASES[0], "axolotl", tmp_path, lora_targets=["q_proj", "v_proj", "embed_tokens"])
    cfg = yaml.safe_load((tmp_path / "axolotl_config.yaml").read_text())
    assert validate(axolotl_schema, cfg, CASES[0]).lora_target_modules == [
        "q_proj",
        "v_proj",
        "embed_tokens",
    ]


def test_the_check_can_fail(axolotl_schema: Any, tmp_path: Path) -> None:
    write(CASES[0], "axolotl", tmp_path)
    cfg = yaml.safe_load((tmp_path / "axolotl_config.yaml").read_text())
    with pytest.raises(AssertionError, match="micro_batch"):
        validate(axolotl_schema, {**cfg, "micro_batch": cfg.pop("micro_batch_size")}, CASES[0])
    cfg = yaml.safe_load((tmp_path / "axolotl_config.yaml").read_text())
    with pytest.raises(ValueError, match="adapter"):
        validate(axolotl_schema, {**cfg, "adapter": "lorra"}, CASES[0])


@pytest.mark.parametrize(
    ("case", "training", "named"),
    [
        (
            CASES[2],
            {"pipeline_parallel": 2, "sharding": "zero1", "offload": "optimizer"},
            "pipeline_parallel 2",
        ),
        (CASES[2], {"sharding": "hsdp"}, "training.sharding hsdp"),
        (CASES[0], {"optimizer": "sgd_momentum"}, "training.optimizer sgd_momentum"),
    ],
)
def test_settings_axolotl_cannot_express_are_named(
    case: Case, training: dict[str, Any], named: str, tmp_path: Path
) -> None:
    with pytest.raises(LaunchError, match=named):
        write(case, "axolotl", tmp_path, **training)
