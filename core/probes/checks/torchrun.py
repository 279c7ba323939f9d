"""Launching an uploaded torch.distributed script with torchrun on one host (collectives and
distributed probes).

NCCL with one rank per CUDA GPU; gloo with two ranks on a host without a usable GPU (so the
collective path is still exercised). torchrun is started as ``python -m torch.distributed.run`` with
the interpreter that has torch (works where the ``torchrun`` entry point is not on PATH), spelled
``--nproc_per_node`` as every torch 1.x and 2.x accepts. Every launch has a timeout.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.probes.checks.base import NAME_PYTHON, ProbeContext, ProbeSkipped, q

CPU_RANKS = 2


@dataclass(frozen=True)
class Launch:
    nproc: int
    backend: str  # "nccl" or "gloo"

    @property
    def on_gpu(self) -> bool:
        return self.backend == "nccl"


def plan_launch(ctx: ProbeContext, *, what: str) -> Launch:
    """How many ranks and which backend; `ProbeSkipped` with the reason when torch cannot do it."""
    python = ctx.facts.python
    if python is None or python.torch is None:
        where = f" ({python.path})" if python is not None else ""
        raise ProbeSkipped(
            f"torch is not installed in the host's Python{where}, so the {what} cannot run "
            f"({NAME_PYTHON})"
        )
    if not python.distributed:
        raise ProbeSkipped(f"torch.distributed is not available in {python.path}")
    if ctx.facts.cuda:
        if python.cuda_devices < 2:
            raise ProbeSkipped(
                f"only one GPU is visible to torch, so there is nothing for the {what} to move "
                "between GPUs"
            )
        if not python.nccl:
            raise ProbeSkipped(f"torch in {python.path} was built without NCCL")
        return Launch(nproc=python.cuda_devices, backend="nccl")
    if not python.gloo:
        raise ProbeSkipped(f"torch in {python.path} has no gloo backend for a CPU run")
    if ctx.facts.nvidia:
        ctx.warn(
            f"torch in {python.path} cannot use CUDA; ran the {what} on CPUs with gloo instead"
        )
    return Launch(nproc=CPU_RANKS, backend="gloo")


def torch_caches_in(workdir: str) -> str:
    """Shell assignments that keep what torch and its compilers cache inside the run's work
    directory (removed at the end) instead of on the host for good: TMPDIR, under which torch's
    inductor makes ``torchinductor_<user>`` by default (torch/_inductor/runtime/cache_dir_utils.py:
    tempfile.gettempdir()), and the caches that default to the home folder: Triton's kernels
    (TRITON_CACHE_DIR, ~/.triton/cache), torch's C++ extensions (TORCH_EXTENSIONS_DIR,
    ~/.cache/torch_extensions) and the CUDA driver's JIT cache (CUDA_CACHE_PATH,
    ~/.nv/ComputeCache)."""
    caches = {
        "TMPDIR": "",
        "TORCHINDUCTOR_CACHE_DIR": "/torchinductor",
        "TRITON_CACHE_DIR": "/triton",
        "TORCH_EXTENSIONS_DIR": "/torch_extensions",
        "CUDA_CACHE_PATH": "/cuda_cache",
    }
    return " ".join(f"{name}={q(workdir + below)}" for name, below in caches.items()) + " "


def torchrun_command(ctx: ProbeContext, launch: Launch, script: str, args: list[str]) -> str:
    """``cd WORKDIR && [env] PYTHON -m torch.distributed.run --standalone ...`` with every value
    quoted."""
    python = ctx.python()
    env = ""
    if launch.backend == "gloo":
        # One host: the ranks talk over loopback unless the user chose an interface.
        env = 'GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-lo}" '
    # TMPDIR: torchelastic makes its log and error-file directory with
    # tempfile.mkdtemp(prefix="torchelastic_") (torch/distributed/elastic/multiprocessing/api.py)
    # and the local agent its watchdog_timer_* file under tempfile.gettempdir()
    # (elastic/agent/server/local_elastic_agent.py); both follow TMPDIR, so everything it writes
    # stays in the run's work directory, which is removed at the end (so do torch's compile caches:
    # torch_caches_in). --standalone keeps the rendezvous in a c10d TCP store on localhost
    # (torch/distributed/run.py), which writes no file.
    env = torch_caches_in(ctx.workdir) + env
    return (
        f"cd {q(ctx.workdir)} && {env}OMP_NUM_THREADS=1 {q(python)} -m torch.distributed.run "
        f"--standalone --nproc_per_node {launch.nproc} {q(script)} " + " ".join(q(a) for a in args)
    )
