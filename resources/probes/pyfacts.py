"""What this Python interpreter can do for the probes: numpy, torch, CUDA, torch.distributed, NVML.

Prints one JSON line. Runs on the probed host with whatever Python it has (3.6 or newer), so it uses
only the standard library at the top and imports everything else inside try blocks.
"""

import json
import platform
import sys


def main():
    out = {"version": platform.python_version(), "executable": sys.executable}
    try:
        import numpy

        out["numpy"] = numpy.__version__
    except Exception:
        out["numpy"] = None
    try:
        import torch

        out["torch"] = torch.__version__
        out["cuda"] = bool(torch.cuda.is_available())
        out["cuda_devices"] = torch.cuda.device_count() if out["cuda"] else 0
        out["cuda_names"] = [torch.cuda.get_device_name(i) for i in range(out["cuda_devices"])]
        out["cuda_version"] = torch.version.cuda
        try:
            import torch.distributed as dist

            out["distributed"] = bool(dist.is_available())
            out["gloo"] = bool(dist.is_available() and dist.is_gloo_available())
            out["nccl"] = bool(dist.is_available() and dist.is_nccl_available())
        except Exception:
            out["distributed"] = False
        if out["cuda"]:
            try:
                version = torch.cuda.nccl.version()
                out["nccl_version"] = (
                    ".".join(str(v) for v in version)
                    if isinstance(version, tuple)
                    else str(version)
                )
            except Exception:
                out["nccl_version"] = None
    except ImportError:
        out["torch"] = None
    except Exception as exc:
        out["torch"] = None
        out["torch_error"] = repr(exc)[:300]
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        out["nvml"] = True
    except Exception:
        out["nvml"] = False
    print(json.dumps(out))


if __name__ == "__main__":
    main()
