"""The kubernetes format's manifests, read back by the schemas the cluster itself would check them
against.

No API server runs here, so every check is offline and against the published schemas:

- the Kubernetes core objects (Service, ConfigMap, PersistentVolumeClaim, and the Job and pod
  templates inside the operators' objects) with kubernetes-validate 1.37.0 in strict mode (unknown
  fields are errors) against the Kubernetes 1.37.0 API;
- TrainJob (Kubeflow Trainer v2.3.0), JobSet (v0.12.0) and PyTorchJob (training-operator v1.9.0)
  against the ``openAPIV3Schema`` of their CRDs (tests/fixtures/launch/kubernetes, SOURCES.md), with
  jsonschema, plus the check an API server makes that jsonschema does not: no field the schema does
  not know (the server would prune it silently), and TrainJob's name rules, read from the CRD's own
  ``x-kubernetes-validations``;
- the pods' torchrun arguments, after the kubelet's ``$(VAR)`` expansion, parsed by torch's own
  torchrun parser (torch.distributed.run.get_args_parser, torch 2.13.0).

Expected numbers are arithmetic on the request and the plan's reported figures, written out here.
"""

from __future__ import annotations

import functools
import math
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from core.launch import LaunchError, render
from core.planner.plan import plan
from core.planner.request import PlanRequest
from core.planner.result import PlanResult
from core.validation import validation_message
from tests.core.launch_cases import TODAY

K8S_VERSION = "1.37.0"  # kubernetes-validate 1.37.0's newest Kubernetes API
FIXTURES = Path(__file__).parents[1] / "fixtures" / "launch" / "kubernetes"
CRDS = {  # kind -> (CRD file, served version): the pinned releases named in SOURCES.md
    "TrainJob": ("trainer.kubeflow.org_trainjobs.yaml", "v1alpha1"),  # Kubeflow Trainer v2.3.0
    "JobSet": ("jobset.x-k8s.io_jobsets.yaml", "v1alpha2"),  # JobSet v0.12.0
    "PyTorchJob": ("kubeflow.org_pytorchjobs.yaml", "v1"),  # training-operator v1.9.0
}
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
GIB = 1024**3


def _request(
    nodes: int = 2,
    spot: bool = False,
    gpu: str = "H100-SXM",
    interconnect: str | None = "infiniband",
    provider: str = "lambda",
    launch: dict[str, Any] | None = None,
    gpus_per_node: int = 8,
) -> PlanRequest:
    hardware: dict[str, Any] = {"gpu": gpu, "gpus_per_node": gpus_per_node, "nodes": nodes}
    if interconnect:
        hardware["interconnect"] = interconnect
    raw: dict[str, Any] = {
        "model": {"preset": "llama-3.1-8b"},
        "data": {"tokens": 2e9, "seq_len": 4096},
        "training": {
            "method": "full",
            "sharding": "fsdp",
            "micro_batch_size": 2,
            "global_batch_size": 128,
        },
        "hardware": hardware,
        "pricing": {"provider": provider, "mode": "spot" if spot else "on_demand"},
        "assumptions": {"checkpoints_kept": 3, "spot_preemptions_per_hour": 0.2},
    }
    if launch:
        raw["launch"] = launch
    return PlanRequest.model_validate(raw)


def _manifests(
    request: PlanRequest, name: str = "llama run"
) -> tuple[PlanResult, dict[str, list[dict[str, Any]]]]:
    result = plan(request, today=TODAY)
    files = render(result, "kubernetes", name=name, today=TODAY)
    return result, {fname: list(yaml.safe_load_all(text)) for fname, text in files.items()}


def _by_kind(files: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for docs in files.values() for doc in docs}


@functools.cache
def _crd_schema(kind: str) -> dict[str, Any]:
    path, version = CRDS[kind]
    crd = yaml.load(
        (FIXTURES / path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    )
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    assert served["served"] is True
    schema: dict[str, Any] = served["schema"]["openAPIV3Schema"]
    return schema


def _unknown_fields(doc: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Fields of `doc` the structural schema does not declare (what the API server would prune)."""
    if isinstance(doc, list):
        items = schema.get("items", {})
        return [f for i, v in enumerate(doc) for f in _unknown_fields(v, items, f"{path}[{i}]")]
    if not isinstance(doc, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    props, extra = schema.get("properties"), schema.get("additionalProperties")
    out = []
    for key, value in doc.items():
        if props is not None and key in props:
            out += _unknown_fields(value, props[key], f"{path}.{key}")
        elif isinstance(extra, dict):
            out += _unknown_fields(value, extra, f"{path}.{key}")
        elif props is not None or extra is False:
            out.append(f"{path}.{key}")
    return out


def _validate_crd_object(doc: dict[str, Any]) -> None:
    schema = _crd_schema(doc["kind"])
    jsonschema.Draft7Validator(schema).validate(doc)
    assert _unknown_fields(doc, schema) == []
    # The CRDs' CEL rules below the top are immutability rules (self == oldSelf) or on fields not
    # written here; the top-level ones are TrainJob's: the name as an RFC 1035 label, at most 63
    # characters.
    for rule in schema.get("x-kubernetes-validations", []):
        matches = re.fullmatch(r"self\.metadata\.name\.matches\('(.+)'\)", rule["rule"])
        size = re.fullmatch(r"size\(self\.metadata\.name\) <= (\d+)", rule["rule"])
        assert matches or size, f"a rule this test cannot evaluate: {rule['rule']}"
        if matches:
            assert re.fullmatch(matches.group(1), doc["metadata"]["name"]), rule["message"]
        if size:
            assert len(doc["metadata"]["name"]) <= int(size.group(1)), rule["message"]


def _validate_core(doc: dict[str, Any]) -> None:
    assert kubernetes_validate.validate(doc, K8S_VERSION, strict=True) == "1.37"


def _core_objects(kinds: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The Kubernetes core objects, and those inside the operators' objects wrapped as the objects
    they are."""
    out = [kinds[k] for k in ("ConfigMap", "PersistentVolumeClaim", "Service") if k in kinds]
    meta = {"name": "inner"}
    if "JobSet" in kinds:
        for rjob in kinds["JobSet"]["spec"]["replicatedJobs"]:
            out.append(
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": meta,
                    "spec": rjob["template"]["spec"],
                }
            )
    if "PyTorchJob" in kinds:
        for replica in kinds["PyTorchJob"]["spec"]["pytorchReplicaSpecs"].values():
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "PodTemplate",
                    "metadata": meta,
                    "template": replica["template"],
                }
            )
    if "TrainJob" in kinds:
        for patch in kinds["TrainJob"]["spec"]["runtimePatches"]:
            for rjob in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
                out.append(
                    {
                        "apiVersion": "v1",
                        "kind": "PodTemplate",
                        "metadata": meta,
                        "template": rjob["template"]["spec"]["template"],
                    }
                )
    return out


PLANS: dict[str, dict[str, Any]] = {
    "2-node InfiniBand": {},
    "1-node": {"nodes": 1},
    "spot on GCP with a queue": {
        "spot": True,
        "provider": "gcp",
        "interconnect": None,
        "launch": {"kueue_queue": "team-a"},
    },
    "2-node PyTorchJob on RoCE": {
        "interconnect": "roce",
        "launch": {"kubernetes_job": "pytorchjob"},
    },
    "1-node PyTorchJob, spot on AWS": {
        "nodes": 1,
        "spot": True,
        "provider": "aws",
        "launch": {"kubernetes_job": "pytorchjob"},
    },
}


@pytest.mark.parametrize("case", list(PLANS))
def test_core_objects_validate_in_strict_mode_against_kubernetes_1_37(case: str) -> None:
    _, files = _manifests(_request(**PLANS[case]))
    kinds = _by_kind(files)
    objects = _core_objects(kinds)
    assert {o["kind"] for o in objects} >= {
        "ConfigMap",
        "PersistentVolumeClaim",
        "PodTemplate" if "PyTorchJob" in kinds else "Job",
    }
    for obj in objects:
        _validate_core(obj)


@pytest.mark.parametrize("case", list(PLANS))
def test_operator_objects_validate_against_their_crds(case: str) -> None:
    """TrainJob v1alpha1 (Trainer v2.3.0), JobSet v1alpha2 (v0.12.0), PyTorchJob v1
    (training-operator v1.9.0)."""
    _, files = _manifests(_request(**PLANS[case]))
    kinds = _by_kind(files)
    operators = [k for k in kinds if k in CRDS]
    pytorch = PLANS[case].get("launch", {}).get("kubernetes_job") == "pytorchjob"
    assert sorted(operators) == (["PyTorchJob"] if pytorch else ["JobSet", "TrainJob"])
    for kind in operators:
        _validate_crd_object(kinds[kind])


def test_the_checks_fail_on_what_a_cluster_would_refuse() -> None:
    """The validators above are not vacuous: a misspelt field, a string GPU count, a bad name each
    fail."""
    _, files = _manifests(_request())
    kinds = _by_kind(files)
    claim = dict(kinds["PersistentVolumeClaim"], specs={})
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate_core(claim)
    trainjob = yaml.safe_load(yaml.safe_dump(kinds["TrainJob"]))
    trainjob["spec"]["trainer"]["numNodes"] = "2"
    with pytest.raises(jsonschema.ValidationError):
        _validate_crd_object(trainjob)
    trainjob = yaml.safe_load(yaml.safe_dump(kinds["TrainJob"]))
    trainjob["spec"]["trainer"]["gpus"] = 8
    with pytest.raises(AssertionError):
        _validate_crd_object(trainjob)
    trainjob["spec"]["trainer"].pop("gpus")
    trainjob["metadata"]["name"] = "9-starts-with-a-digit"
    with pytest.raises(AssertionError):
        _validate_crd_object(trainjob)


def _expand(text: str, env: dict[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion of a container's command and args (unknown names stay as
    written)."""
    return re.sub(
        r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), text
    )


def _torchrun(args: list[str], env: dict[str, str]) -> Any:
    from torch.distributed.run import get_args_parser

    return get_args_parser().parse_args([_expand(a, env) for a in args])


def test_a_two_node_jobset_meets_at_one_rendezvous_through_its_service() -> None:
    """Each pod as JobSet names it (``<jobset>-<job>-<job index>-<pod index>``, in the service's
    subdomain) and as the Indexed Job numbers it (JOB_COMPLETION_INDEX): same endpoint, nnodes 2,
    ranks 0 and 1."""
    _, files = _manifests(_request(nodes=2))
    kinds = _by_kind(files)
    service, jobset = kinds["Service"], kinds["JobSet"]
    assert (
        service["spec"]["clusterIP"] == "None"
        and service["spec"]["publishNotReadyAddresses"] is True
    )
    assert jobset["spec"]["network"]["subdomain"] == service["metadata"]["name"]
    assert service["spec"]["selector"] == {
        "jobset.sigs.k8s.io/jobset-name": jobset["metadata"]["name"]
    }
    (rjob,) = jobset["spec"]["replicatedJobs"]
    job = rjob["template"]["spec"]
    assert (job["completionMode"], job["parallelism"], job["completions"]) == ("Indexed", 2, 2)
    (container,) = job["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    settings_map = kinds["ConfigMap"]["data"]
    pods = []
    for index in range(2):
        hostname = f"{jobset['metadata']['name']}-{rjob['name']}-0-{index}"
        pods.append(
            (
                hostname,
                _torchrun(
                    container["args"], {**settings_map, **env, "JOB_COMPLETION_INDEX": str(index)}
                ),
            )
        )
    rank0_host = f"{pods[0][0]}.{service['metadata']['name']}"
    for _, args in pods:
        assert (args.nnodes, args.nproc_per_node, args.master_addr, args.master_port) == (
            "2",
            "8",
            rank0_host,
            29500,
        )
        assert args.training_script == "train.py"
    assert sorted(args.node_rank for _, args in pods) == [0, 1]
    assert container["command"] == ["torchrun"]


def test_a_two_node_pytorchjob_has_one_master_and_workers_that_find_it() -> None:
    """training-operator v1.9 sets MASTER_ADDR to the master's service (``<job>-master-0``),
    MASTER_PORT to the port named pytorchjob-port, RANK 0 for the master and 1… for the workers."""
    _, files = _manifests(_request(nodes=2, launch={"kubernetes_job": "pytorchjob"}))
    job = _by_kind(files)["PyTorchJob"]
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert (specs["Master"]["replicas"], specs["Worker"]["replicas"]) == (1, 1)
    master_service = f"{job['metadata']['name']}-master-0"
    ranks = []
    for role, offset in (("Master", 0), ("Worker", 1)):
        (container,) = specs[role]["template"]["spec"]["containers"]
        assert container["name"] == "pytorch"
        (port,) = [p["containerPort"] for p in container["ports"] if p["name"] == "pytorchjob-port"]
        for i in range(specs[role]["replicas"]):
            args = _torchrun(
                container["args"],
                {
                    "MASTER_ADDR": master_service,
                    "MASTER_PORT": str(port),
                    "RANK": str(offset + i),
                    "TRAIN_SCRIPT": "train.py",
                },
            )
            assert (args.nnodes, args.master_addr, args.master_port) == ("2", master_service, port)
            ranks.append(args.node_rank)
    assert ranks == [0, 1]
    assert job["spec"]["nprocPerNode"] == "8"


def test_the_trainjob_leaves_the_rendezvous_to_the_torch_runtime() -> None:
    """Trainer's torch-distributed runtime sets PET_NNODES, PET_NODE_RANK and PET_MASTER_ADDR from
    numNodes; a rendezvous flag in the command would override them."""
    _, files = _manifests(_request(nodes=2))
    trainer = _by_kind(files)["TrainJob"]["spec"]["trainer"]
    assert (trainer["numNodes"], trainer["numProcPerNode"]) == (2, 8)
    assert trainer["command"] == ["torchrun", "$(TRAIN_SCRIPT)"]
    assert trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == 8


def test_one_node_runs_torchrun_standalone() -> None:
    _, files = _manifests(_request(nodes=1))
    (container,) = _by_kind(files)["JobSet"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"
    ]["spec"]["containers"]
    args = _torchrun(container["args"], {"TRAIN_SCRIPT": "train.py"})
    assert args.standalone and args.nproc_per_node == "8"


def _pod_specs(kinds: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    specs = [
        rj["template"]["spec"]["template"]["spec"]
        for rj in kinds["JobSet"]["spec"]["replicatedJobs"]
    ]
    for patch in kinds["TrainJob"]["spec"]["runtimePatches"]:
        specs += [
            rj["template"]["spec"]["template"]["spec"]
            for rj in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        ]
    return specs


def test_pods_get_shm_the_gpu_product_tolerations_rdma_and_the_checkpoint_claim() -> None:
    result, files = _manifests(_request(nodes=2, interconnect="infiniband"))
    kinds = _by_kind(files)
    claim = kinds["PersistentVolumeClaim"]
    for spec in _pod_specs(kinds):
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
        assert (
            volumes["checkpoints"]["persistentVolumeClaim"]["claimName"]
            == claim["metadata"]["name"]
        )
        # GPU feature discovery's value for the driver's "NVIDIA H100 80GB HBM3"
        # (tests/fixtures/probes).
        assert spec["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec[
            "tolerations"
        ]
        (container,) = spec["containers"]
        assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
        assert {m["mountPath"] for m in container["volumeMounts"]} == {"/dev/shm", "/checkpoints"}
    # /dev/shm: NCCL's 1 GiB + 8 GPUs × max(0.5 GiB, 4 workers × 2 batches × 2 × 4096 × 3 × 8 B =
    # 1.5 MiB) = 5 GiB.
    assert _pod_specs(kinds)[0]["volumes"][0]["emptyDir"]["sizeLimit"] == "5Gi"
    limits = _pod_specs(kinds)[0]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": 8, "rdma/rdma_shared_device_a": 1}
    # The claim: 3 kept + 1 being written, each the plan's checkpoint size, rounded up to GiB; every
    # node writes.
    want = math.ceil(result.checkpoint.size_bytes * 4 / GIB)
    assert claim["spec"]["resources"]["requests"]["storage"] == f"{want}Gi" and want > 4
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]


def test_ethernet_pods_ask_for_no_rdma() -> None:
    _, files = _manifests(_request(nodes=2, interconnect="ethernet"))
    for spec in _pod_specs(_by_kind(files)):
        (container,) = spec["containers"]
        assert "securityContext" not in container
        assert "rdma/rdma_shared_device_a" not in container.get("resources", {}).get("limits", {})


def test_a_spot_plan_is_preemptible_and_carries_its_interval_and_resume() -> None:
    result, files = _manifests(_request(spot=True, provider="gcp", interconnect=None))
    kinds = _by_kind(files)
    steps = int(result.checkpoint.interval_minutes * 60 // result.compute.step_time_s)
    assert 1 < steps < result.compute.steps
    data = kinds["ConfigMap"]["data"]
    assert (
        data["SAVE_STEPS"],
        data["SAVE_TOTAL_LIMIT"],
        data["RESUME"],
        data["CHECKPOINT_DIR"],
    ) == (str(steps), "3", "1", "/checkpoints")
    for kind in ("TrainJob", "JobSet"):
        meta = kinds[kind]["metadata"]
        assert meta["labels"]["tuneplan.io/preemptible"] == "true"
        assert meta["annotations"]["tuneplan.io/checkpoint-every-steps"] == str(steps)
    # The JobSet's pods read the ConfigMap whole; the TrainJob's trainer names each of its keys.
    (container,) = _pod_specs(kinds)[0]["containers"]
    assert container["envFrom"] == [
        {"configMapRef": {"name": kinds["ConfigMap"]["metadata"]["name"]}}
    ]
    env = {
        e["name"]: e["valueFrom"]["configMapKeyRef"]["key"]
        for e in kinds["TrainJob"]["spec"]["trainer"]["env"]
    }
    assert {"SAVE_STEPS", "RESUME", "SAVE_TOTAL_LIMIT", "CHECKPOINT_DIR"} <= set(env)
    # GKE Spot VMs: their node label and taint.
    for spec in _pod_specs(kinds):
        assert spec["nodeSelector"]["cloud.google.com/gke-spot"] == "true"
        assert any(t["key"] == "cloud.google.com/gke-spot" for t in spec["tolerations"])
        assert spec["terminationGracePeriodSeconds"] >= math.ceil(result.compute.step_time_s)
    assert kinds["JobSet"]["spec"]["failurePolicy"]["maxRestarts"] >= 3


def test_a_named_queue_is_kueues_label_and_the_job_waits_suspended() -> None:
    _, files = _manifests(_request(launch={"kueue_queue": "team-a"}))
    kinds = _by_kind(files)
    for kind in ("TrainJob", "JobSet"):
        assert kinds[kind]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
        assert kinds[kind]["spec"]["suspend"] is True
    _, files = _manifests(_request(launch={"kubernetes_job": "pytorchjob", "kueue_queue": "q1"}))
    job = _by_kind(files)["PyTorchJob"]
    assert (
        job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q1"
        and job["spec"]["runPolicy"]["suspend"]
    )
    _, files = _manifests(_request())
    assert "suspend" not in _by_kind(files)["JobSet"]["spec"]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=70))
def test_a_queue_name_is_a_dns_label_or_one_sentence(name: str) -> None:
    raw = _request().model_dump(mode="json", exclude_none=True) | {"launch": {"kueue_queue": name}}
    valid = len(name) <= 63 and DNS_LABEL.fullmatch(name) is not None
    try:
        PlanRequest.model_validate(raw)
    except ValidationError as exc:
        message = validation_message(exc)
        assert not valid
        assert message.startswith("launch.kueue_queue ") and "\n" not in message
        assert "1 to 63 lowercase letters, digits and '-'" in message
    else:
        assert valid


@settings(max_examples=30, deadline=None)
@given(st.text(min_size=1, max_size=200))
def test_object_names_are_dns_labels_whatever_the_plan_is_called(name: str) -> None:
    result = plan(_request(), today=TODAY)
    for text in render(result, "kubernetes", name=name, today=TODAY).values():
        for doc in yaml.safe_load_all(text):
            assert (
                DNS_LABEL.fullmatch(doc["metadata"]["name"]) and len(doc["metadata"]["name"]) <= 63
            )
            if doc["kind"] == "TrainJob":
                assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", doc["metadata"]["name"])
            # the last pod's hostname, <jobset>-node-0-<index>, is a DNS label too
            if doc["kind"] == "JobSet":
                job = doc["spec"]["replicatedJobs"][0]["template"]["spec"]
                last = f"{doc['metadata']['name']}-node-0-{job['completions'] - 1}"
                assert DNS_LABEL.fullmatch(last) and len(last) <= 63


def test_driver_names_are_the_ones_recorded_on_real_machines() -> None:
    """The product names the selector is built from, as nvidia-smi printed them in this project's
    probe fixtures."""
    from core.launch.kubernetes_objects import DRIVER_NAMES, sanitise

    probes = Path(__file__).parents[1] / "fixtures" / "probes"
    recorded = "\n".join(p.read_text(errors="replace") for p in probes.iterdir() if p.is_file())
    for gpu in ("H100-SXM", "A100-40GB-SXM", "A100-80GB-SXM", "L40S"):
        assert DRIVER_NAMES[gpu] in recorded
    # sanitise as k8s-device-plugin v0.20.0 writes it: odd characters dropped, spaces runs made one
    # dash.
    assert sanitise("NVIDIA  A100 80GB PCIe (x)") == "NVIDIA-A100-80GB-PCIe-x"


def test_a_gpu_without_the_nvidia_device_plugin_is_one_sentence() -> None:
    result = plan(_request(gpu="MI300X", nodes=1), today=TODAY)
    with pytest.raises(
        LaunchError, match=r"^hardware\.gpu MI300X is a AMD part; .*--format skypilot or slurm$"
    ):
        render(result, "kubernetes", name="x", today=TODAY)


def test_files_are_the_common_objects_and_the_chosen_jobs() -> None:
    _, files = _manifests(_request())
    assert {n: [d["kind"] for d in docs] for n, docs in files.items()} == {
        "k8s_common.yaml": ["ConfigMap", "PersistentVolumeClaim"],
        "k8s_trainjob.yaml": ["TrainJob"],
        "k8s_jobset.yaml": ["Service", "JobSet"],
    }
    _, files = _manifests(_request(launch={"kubernetes_job": "pytorchjob"}))
    assert sorted(files) == ["k8s_common.yaml", "k8s_pytorchjob.yaml"]


TRAIN = """import os, sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank())])
dist.all_reduce(t)
with open(os.path.join(sys.argv[1], f"rank{dist.get_rank()}"), "w") as fh:
    fh.write(f"{dist.get_world_size()} {os.environ['GROUP_RANK']} {t.item():g} {os.environ['SAVE_STEPS']}")
dist.destroy_process_group()  # as a training script ends: gloo's threads joined, not torn down by the exit
"""  # noqa: E501


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pods(kind: str, request: PlanRequest) -> tuple[str, list[tuple[list[str], dict[str, str]]]]:
    """(the rendezvous host the pods are given, each pod's torchrun args and environment as the
    operator and the kubelet make them)."""
    _, files = _manifests(request)
    kinds = _by_kind(files)
    settings_map = kinds["ConfigMap"]["data"]
    if kind == "JobSet":
        job = kinds["JobSet"]["spec"]["replicatedJobs"][0]["template"]["spec"]
        (container,) = job["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        return env["MASTER_ADDR"], [
            (container["args"], {**settings_map, **env, "JOB_COMPLETION_INDEX": str(i)})
            for i in range(job["completions"])
        ]
    job = kinds["PyTorchJob"]
    host = f"{job['metadata']['name']}-master-0"
    pods = []
    for role, offset in (("Master", 0), ("Worker", 1)):
        spec = job["spec"]["pytorchReplicaSpecs"][role]
        (container,) = spec["template"]["spec"]["containers"]
        pods += [
            (
                container["args"],
                {
                    **settings_map,
                    "MASTER_ADDR": host,
                    "MASTER_PORT": "29500",
                    "RANK": str(offset + i),
                },
            )
            for i in range(spec["replicas"])
        ]
    return host, pods


@pytest.mark.parametrize("kind", ["JobSet", "PyTorchJob"])
def test_two_pods_of_a_two_node_plan_really_meet_and_all_reduce(kind: str, tmp_path: Path) -> None:
    """Each pod's torchrun, args expanded as the kubelet expands them, run as two processes on this
    machine with torch.distributed over gloo: the service's name for the rendezvous host stands for
    127.0.0.1 here, and the port is a free one (both are the pods' environment, which the args
    read). A 2-node × 1-GPU plan, so each node runs one worker."""
    request = _request(
        nodes=2,
        gpus_per_node=1,
        launch={"kubernetes_job": "pytorchjob"} if kind == "PyTorchJob" else None,
    )
    host, pods = _pods(kind, request)
    assert len(pods) == 2
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    port = str(_free_port())
    procs = []
    for i, (args, env) in enumerate(pods):
        env = {**env, "MASTER_PORT": port, "TRAIN_SCRIPT": str(script)}
        expanded = [_expand(a, env) for a in args]
        assert f"--master-addr={host}" in expanded  # one rendezvous host for both pods
        expanded = [a.replace(host, "127.0.0.1") for a in expanded] + [str(tmp_path)]
        # no lookup of a name no DNS here knows
        env = {k: v.replace(host, "127.0.0.1") for k, v in env.items()}
        # a file, not a pipe nobody reads while the other runs
        with (tmp_path / f"pod{i}.log").open("w") as log:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "torch.distributed.run", *expanded],
                    env={"GLOO_SOCKET_IFNAME": "lo", **os.environ, **env},
                    cwd=tmp_path,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
    try:
        for i, proc in enumerate(procs):
            assert proc.wait(timeout=240) == 0, (tmp_path / f"pod{i}.log").read_text()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    results = sorted((tmp_path / f"rank{r}").read_text().split() for r in range(2))
    # world 2, node ranks 0 and 1, all-reduce of ranks 0 + 1 = 1, the plan's interval read from the
    # ConfigMap.
    steps = _by_kind(_manifests(request)[1])["ConfigMap"]["data"]["SAVE_STEPS"]
    assert results == [["2", "0", "1", steps], ["2", "1", "1", steps]]


@pytest.mark.parametrize("interconnect", ["efa", "infiniband", "ethernet"])
def test_the_configmap_is_the_environment_torchrun_sh_exports(interconnect: str) -> None:
    """Same variables and values as torchrun.sh for the same plan, but the checkpoint folder: the
    claim's mount."""
    request = _request(nodes=2, interconnect=interconnect, provider="aws", spot=True)
    result, files = _manifests(request)
    data = _by_kind(files)["ConfigMap"]["data"]
    script = render(result, "torchrun", name="llama run", today=TODAY)["torchrun.sh"]
    exported = dict(re.findall(r'^export (\w+)="\$\{\w+:-([^}]*)\}"$', script, re.MULTILINE))
    assert data.pop("CHECKPOINT_DIR") == "/checkpoints" and exported.pop("CHECKPOINT_DIR")
    # torchrun.sh's TRAIN_SCRIPT default, not an export
    assert data.pop("TRAIN_SCRIPT") == "train.py"
    assert data == exported
    assert ("FI_PROVIDER" in data) == (interconnect == "efa")
