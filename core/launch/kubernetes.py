"""`kubernetes`: the plan as manifests for the training operators people run on a Kubernetes
cluster.

Files (apply ``k8s_common.yaml`` and one job file; README "Launch files"):

- ``k8s_common.yaml``: the ConfigMap of the run's settings and the checkpoints'
  PersistentVolumeClaim (``core.launch.kubernetes_objects``), which every job file below mounts.
- ``k8s_trainjob.yaml``: Kubeflow Trainer's TrainJob (trainer.kubeflow.org/v1alpha1, Trainer v2.3.0)
  on the ``torch-distributed`` ClusterTrainingRuntime Trainer installs. The runtime sets torchrun's
  rendezvous itself (``PET_NNODES``, ``PET_NODE_RANK``, ``PET_MASTER_ADDR`` = node 0 through the
  JobSet's headless service), so the command is torchrun and the script; the pod settings go in a
  ``runtimePatches`` entry, the environment in ``trainer.env`` (Trainer forbids patching the
  ``node`` container's env).
- ``k8s_jobset.yaml``: a headless Service and a JobSet (jobset.x-k8s.io/v1alpha2, JobSet v0.12.0)
  for clusters with JobSet but not Trainer: one Indexed Job of ``nodes`` pods, pod 0 hosting the
  rendezvous. JobSet names each pod ``<jobset>-node-0-<index>`` and puts it in the service's
  subdomain (``network.subdomain``; JobSet creates no service of its own when one of that name
  exists), so every pod reaches the same ``MASTER_ADDR``; each passes its completion index
  (``JOB_COMPLETION_INDEX``, set by the Job controller) as ``--node-rank``. A failed pod fails its
  Job (``backoffLimit: 0``) and JobSet restarts all of them (``failurePolicy.maxRestarts``): a
  collective cannot continue without a rank, and the restarted pods resume.
- ``k8s_pytorchjob.yaml`` instead of those two, when the request says ``launch.kubernetes_job:
  pytorchjob``: Kubeflow's PyTorchJob (kubeflow.org/v1, training-operator v1.9), one Master and
  ``nodes - 1`` Workers; the operator makes the services and sets ``MASTER_ADDR`` (the master's
  service), ``MASTER_PORT`` (the container port named ``pytorchjob-port``) and ``RANK`` (0 for the
  master, 1… for the workers) in each pod.

A Kueue queue (``launch.kueue_queue``) is the job's ``kueue.x-k8s.io/queue-name`` label, and the job
is created suspended for Kueue to admit. A spot plan's objects are labelled preemptible and
annotated with the checkpoint interval; its pods read ``SAVE_STEPS`` and ``RESUME=1`` from the
ConfigMap, and get `slurm.save_grace_s` seconds between SIGTERM and SIGKILL to save. Only tuneplan's
words, numbers and `object_name` reach a key, a command or a name; the plan's name is an annotation
value and a header comment.
"""

from __future__ import annotations

import math
from typing import Any

from core.catalog.overrides import load_catalog
from core.launch import emit
from core.launch import kubernetes_objects as k8s
from core.launch.plan_view import LaunchError, LaunchPlan
from core.launch.skypilot import MAX_RESTARTS_ON_ERRORS
from core.launch.slurm import save_grace_s
from core.launch.torchrun import PORT, network

COMMON = "k8s_common.yaml"
TRAINJOB = "k8s_trainjob.yaml"
JOBSET = "k8s_jobset.yaml"
PYTORCHJOB = "k8s_pytorchjob.yaml"
# the torch-distributed runtime's replicated job and container name (Trainer v2.3.0)
REPLICATED_JOB = "node"
RUNTIME = "torch-distributed"
PATCH_MANAGER = "tuneplan.io/launch"
# training-operator's default port name (pkg/apis/kubeflow.org/v1)
PYTORCHJOB_PORT_NAME = "pytorchjob-port"


def restarts(p: LaunchPlan) -> int:
    """Whole-job restarts allowed: the plan's expected failures and preemptions over the run,
    rounded up, and `MAX_RESTARTS_ON_ERRORS` more (SkyPilot's retry count for a managed job,
    core.launch.skypilot)."""
    return math.ceil(p.result.checkpoint.expected_failures) + MAX_RESTARTS_ON_ERRORS


def master_addr(p: LaunchPlan) -> str:
    """JobSet pod 0's name in the headless service's subdomain: ``<jobset>-node-0-0.<service>``."""
    return f"{k8s.object_name(p)}-{REPLICATED_JOB}-0-0.{k8s.object_name(p)}"


def torchrun_args(p: LaunchPlan, node_rank: str, addr: str, port: str) -> list[str]:
    """torchrun's arguments in a pod; ``$(VAR)`` is expanded by the kubelet from the container's
    environment."""
    if p.nodes == 1:
        return ["--standalone", f"--nproc-per-node={p.gpus_per_node}", "$(TRAIN_SCRIPT)"]
    return [
        f"--nnodes={p.nodes}",
        f"--nproc-per-node={p.gpus_per_node}",
        f"--node-rank={node_rank}",
        f"--master-addr={addr}",
        f"--master-port={port}",
        "$(TRAIN_SCRIPT)",
    ]


def _pod_template(p: LaunchPlan, container: dict[str, Any], restart: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": k8s.labels(p)},
        "spec": {"restartPolicy": restart, "containers": [container], **k8s.pod_spec_extras(p)},
    }


def jobset(p: LaunchPlan) -> list[dict[str, Any]]:
    """The headless Service and the JobSet."""
    name = k8s.object_name(p)
    env = [
        {"name": "MASTER_ADDR", "value": master_addr(p)},
        {"name": "MASTER_PORT", "value": str(PORT)},
    ]
    args = torchrun_args(p, "$(JOB_COMPLETION_INDEX)", "$(MASTER_ADDR)", "$(MASTER_PORT)")
    container = k8s.container(p, REPLICATED_JOB, args, env if p.nodes > 1 else [])
    container["ports"] = [{"name": "rendezvous", "containerPort": PORT, "protocol": "TCP"}]
    job = {
        "parallelism": p.nodes,
        "completions": p.nodes,
        "completionMode": "Indexed",
        "backoffLimit": 0,
        "template": _pod_template(p, container, "Never"),
    }
    spec: dict[str, Any] = {
        "network": {
            "enableDNSHostnames": True,
            "subdomain": name,
            "publishNotReadyAddresses": True,
        },
        "failurePolicy": {"maxRestarts": restarts(p)},
        "replicatedJobs": [{"name": REPLICATED_JOB, "replicas": 1, "template": {"spec": job}}],
    }
    if k8s.queued(p):
        spec["suspend"] = True
    service = k8s.headless_service(p, {"jobset.sigs.k8s.io/jobset-name": name}, PORT)
    return [
        service,
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": k8s.metadata(p, name, job=True),
            "spec": spec,
        },
    ]


def trainjob(p: LaunchPlan) -> dict[str, Any]:
    """Kubeflow Trainer's TrainJob on the torch-distributed runtime, the pod settings as a runtime
    patch."""
    env = [
        {
            "name": key,
            "valueFrom": {"configMapKeyRef": {"name": k8s.object_name(p, "settings"), "key": key}},
        }
        for key in k8s.settings(p)
    ]
    node: dict[str, Any] = {"name": REPLICATED_JOB, "volumeMounts": k8s.volume_mounts()}
    context = k8s.security_context(p)
    if context:
        node["securityContext"] = context
    pod = {
        "metadata": {"labels": k8s.labels(p)},
        "spec": {**k8s.pod_spec_extras(p), "containers": [node]},
    }
    patch = {
        "manager": PATCH_MANAGER,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": REPLICATED_JOB, "template": {"spec": {"template": pod}}}
                    ]
                }
            }
        },
    }
    spec: dict[str, Any] = {
        "runtimeRef": {
            "apiGroup": "trainer.kubeflow.org",
            "kind": "ClusterTrainingRuntime",
            "name": RUNTIME,
        },
        "trainer": {
            "image": k8s.IMAGE,
            "command": ["torchrun", "$(TRAIN_SCRIPT)"],
            "env": env,
            "numNodes": p.nodes,
            "numProcPerNode": p.gpus_per_node,
            "resourcesPerNode": {"limits": k8s.gpu_limits(p)},
        },
        "runtimePatches": [patch],
    }
    if k8s.queued(p):
        spec["suspend"] = True
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": k8s.metadata(p, k8s.object_name(p), job=True),
        "spec": spec,
    }


def pytorchjob(p: LaunchPlan) -> dict[str, Any]:
    """Kubeflow's PyTorchJob: a Master and nodes - 1 Workers, rank and address from the operator."""
    args = torchrun_args(p, "$(RANK)", "$(MASTER_ADDR)", "$(MASTER_PORT)")
    # training-operator requires the container name pytorch
    container = k8s.container(p, "pytorch", args, [])
    container["ports"] = [{"name": PYTORCHJOB_PORT_NAME, "containerPort": PORT, "protocol": "TCP"}]
    replicas = {
        "Master": {
            "replicas": 1,
            "restartPolicy": "OnFailure",
            "template": _pod_template(p, container, "OnFailure"),
        }
    }
    if p.nodes > 1:
        replicas["Worker"] = {
            "replicas": p.nodes - 1,
            "restartPolicy": "OnFailure",
            "template": _pod_template(p, container, "OnFailure"),
        }
    run_policy: dict[str, Any] = {"backoffLimit": restarts(p), "cleanPodPolicy": "None"}
    if k8s.queued(p):
        run_policy["suspend"] = True
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": k8s.metadata(p, k8s.object_name(p), job=True),
        "spec": {
            "nprocPerNode": str(p.gpus_per_node),
            "runPolicy": run_policy,
            "pytorchReplicaSpecs": replicas,
        },
    }


def _check(p: LaunchPlan) -> None:
    gpu = load_catalog().gpu(p.result.hardware.gpu)
    if gpu.vendor != "NVIDIA":
        raise LaunchError(
            f"hardware.gpu {p.result.hardware.gpu} is a {gpu.vendor} part; the kubernetes format "
            f"requests {k8s.GPU_RESOURCE} (NVIDIA's device plugin): plan an NVIDIA GPU or use "
            "--format skypilot or slurm"
        )


def notes(p: LaunchPlan, job_files: list[str]) -> list[str]:
    """What every file's header says under the plan's lines: how to apply, and what the files leave
    to the user."""
    out = [
        f"apply: kubectl apply -f {COMMON} -f {job_files[0]}"
        + (
            f"   (or -f {job_files[1]} where the cluster runs JobSet without Kubeflow Trainer; "
            "not both)"
            if len(job_files) > 1
            else ""
        ),
        f"image {k8s.IMAGE} has torch, not your training script: build on it (TRAIN_SCRIPT, in "
        "the ConfigMap)",
        f"checkpoints: claim {k8s.object_name(p, 'checkpoints')} at {k8s.CHECKPOINT_MOUNT} "
        f"({k8s.quantity(k8s.checkpoint_claim_bytes(p))}: {p.checkpoints_kept} kept + 1 being "
        "written), "
        "the cluster's default storage class unless you add storageClassName"
        + ("; ReadWriteMany, since every node's pod writes there" if p.nodes > 1 else ""),
        f"/dev/shm: {k8s.quantity(k8s.shm_bytes(p))} in memory (NCCL and the data loaders), "
        "counted in the pod's "
        "memory",
    ]
    product = k8s.gpu_product(p)
    out.append(
        f"nodes: {k8s.PRODUCT_LABEL}={product} (GPU feature discovery's label)"
        if product
        else f"nodes: no {k8s.PRODUCT_LABEL} selector: the driver's name for "
        f"{p.result.hardware.gpu} is not "
        "known here; add the label value your nodes carry (kubectl get nodes -L "
        "nvidia.com/gpu.product)"
    )
    if k8s.rdma(p):
        out += [
            f"network: {network(p).value}; the pods ask for {k8s.RDMA_RESOURCE} and IPC_LOCK: use "
            "the "
            "RDMA resource name your cluster's device plugin advertises (kubectl describe node)",
            "NCCL finds the HCAs itself; only if the cluster's admins say so, add NCCL_IB_HCA and "
            "NCCL_SOCKET_IFNAME to the ConfigMap"
            + (" (NCCL_IB_GID_INDEX before NCCL 2.21)" if network(p).value == "roce" else ""),
        ]
    elif p.nodes > 1 and "FI_PROVIDER" in k8s.settings(p):
        out.append(
            "network: efa; FI_PROVIDER=efa in the ConfigMap (the image needs the aws-ofi-nccl "
            "plugin), and add vpc.amazonaws.com/efa to the limits where the EFA device plugin runs"
        )
    elif p.nodes > 1:
        out.append(
            f"network: {network(p).value}; NCCL uses TCP sockets: if it picks the wrong "
            "interface, add "
            "NCCL_SOCKET_IFNAME to the ConfigMap"
        )
    if p.spot:
        out.append(
            f"spot: preemptible; checkpoints every {p.save_steps} steps "
            f"(~{p.result.checkpoint.interval_minutes:.0f} min), RESUME=1 restarts from the "
            f"newest, {restarts(p)} restarts allowed, {save_grace_s(p)} s from SIGTERM to save"
        )
    queue = k8s.job_labels(p).get("kueue.x-k8s.io/queue-name")
    if queue:
        out.append(
            f"Kueue: queue {queue}, created suspended; Kueue starts it when the queue admits it"
        )
    return out


def files(p: LaunchPlan) -> dict[str, str]:
    _check(p)
    pytorch = (
        p.result.request.launch is not None
        and p.result.request.launch.kubernetes_job == "pytorchjob"
    )
    jobs = [PYTORCHJOB] if pytorch else [TRAINJOB, JOBSET]
    header = [*p.header_lines(k8s.CHECKPOINT_MOUNT), "", *notes(p, jobs)]
    out = {COMMON: emit.yaml_documents([k8s.config_map(p), k8s.checkpoint_claim(p)], header)}
    if pytorch:
        out[PYTORCHJOB] = emit.yaml_documents([pytorchjob(p)], header)
    else:
        out[TRAINJOB] = emit.yaml_documents([trainjob(p)], header)
        out[JOBSET] = emit.yaml_documents(jobset(p), header)
    return out
