"""Bytes per cached pod: N realistic KubeRay worker pods through the informer's path into the pod cache.

Each pod is decoded from JSON bytes one at a time (as watch events arrive), prepared (managedFields
stripped, frozen) and stored with the cache's indexes; the memory still held afterwards, measured with
tracemalloc, divided by N is the cost of one cached pod. Target: under 30 KB.

    python benchmarks/cache_memory.py [N]
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from typing import Any

import orjson

from kuberay.runtime.cache import Store, prepare


def kuberay_pod(i: int) -> dict[str, Any]:
    """A worker pod as the operator creates it and the kubelet reports it, managedFields included."""
    cluster = f"raycluster-{i // 50}"
    name = f"{cluster}-small-group-worker-{i:05x}"
    labels = {
        "ray.io/cluster": cluster,
        "ray.io/group": "small-group",
        "ray.io/node-type": "worker",
        "ray.io/identifier": f"{cluster}-worker",
        "ray.io/is-ray-node": "yes",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    env = [
        {"name": "FQ_RAY_IP", "value": f"{cluster}-head-svc.default.svc.cluster.local"},
        {"name": "RAY_IP", "value": f"{cluster}-head-svc"},
        {
            "name": "RAY_CLUSTER_NAME",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['ray.io/cluster']"}},
        },
        {
            "name": "RAY_CLOUD_INSTANCE_ID",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
        },
        {
            "name": "RAY_NODE_TYPE_NAME",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['ray.io/group']"}},
        },
        {
            "name": "KUBERAY_GEN_RAY_START_CMD",
            "value": "ray start  --address=raycluster-head-svc:6379  --block  --dashboard-agent-listen-port=52365  --memory=4294967296  --metrics-export-port=8080  --num-cpus=1 ",
        },
        {"name": "RAY_PORT", "value": "6379"},
        {"name": "RAY_ADDRESS", "value": f"{cluster}-head-svc:6379"},
        {"name": "RAY_USAGE_STATS_KUBERAY_IN_USE", "value": "1"},
        {"name": "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "value": "1"},
    ]
    probe = {
        "exec": {
            "command": [
                "bash",
                "-c",
                "wget -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success",
            ]
        },
        "failureThreshold": 10,
        "initialDelaySeconds": 30,
        "periodSeconds": 5,
        "successThreshold": 1,
        "timeoutSeconds": 2,
    }
    managed = {
        "manager": "kuberay-operator",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-11-30T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {f"f:{k}": {} for k in labels}},
            "f:spec": {
                "f:containers": {
                    'k:{"name":"ray-worker"}': {
                        ".": {},
                        "f:env": {f'k:{{"name":"{e["name"]}"}}': {} for e in env},
                    }
                }
            },
        },
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": f"{cluster}-small-group-worker-",
            "namespace": "default",
            "uid": f"5f1e0c3a-{i:04x}-4b1d-9a57-{i:012x}",
            "resourceVersion": str(100000 + i),
            "creationTimestamp": "2026-11-30T00:00:00Z",
            "labels": labels,
            "annotations": {"ray.io/ft-enabled": "false", "ray.io/overwrite-container-cmd": "false"},
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayCluster",
                    "name": cluster,
                    "uid": f"0a0b0c0d-{i // 50:04x}-4000-8000-000000000000",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [managed, dict(managed, manager="kubelet", subresource="status")],
        },
        "spec": {
            "containers": [
                {
                    "name": "ray-worker",
                    "image": "rayproject/ray:2.52.0",
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["/bin/bash", "-c", "--"],
                    "args": ["ulimit -n 65536; $KUBERAY_GEN_RAY_START_CMD"],
                    "env": env,
                    "ports": [{"containerPort": 8080, "name": "metrics", "protocol": "TCP"}],
                    "resources": {
                        "limits": {"cpu": "1", "memory": "4Gi"},
                        "requests": {"cpu": "1", "memory": "4Gi"},
                    },
                    "livenessProbe": probe,
                    "readinessProbe": dict(probe, failureThreshold=10, initialDelaySeconds=10),
                    "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", "ray stop"]}}},
                    "volumeMounts": [
                        {"mountPath": "/dev/shm", "name": "shared-mem"},
                        {
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                            "name": "kube-api-access-x7k2p",
                            "readOnly": True,
                        },
                    ],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }
            ],
            "volumes": [
                {"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "4Gi"}},
                {
                    "name": "kube-api-access-x7k2p",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                            "path": "namespace",
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                },
            ],
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": f"node-{i % 100}",
            "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30,
            "enableServiceLinks": True,
            "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [
                {
                    "effect": "NoExecute",
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "tolerationSeconds": 300,
                },
                {
                    "effect": "NoExecute",
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "tolerationSeconds": 300,
                },
            ],
        },
        "status": {
            "phase": "Running",
            "hostIP": f"10.0.{i % 100}.1",
            "podIP": f"10.244.{(i // 250) % 256}.{i % 250}",
            "podIPs": [{"ip": f"10.244.{(i // 250) % 256}.{i % 250}"}],
            "qosClass": "Guaranteed",
            "startTime": "2026-11-30T00:00:01Z",
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": "2026-11-30T00:00:05Z",
                }
                for t in (
                    "PodReadyToStartContainers",
                    "Initialized",
                    "Ready",
                    "ContainersReady",
                    "PodScheduled",
                )
            ],
            "containerStatuses": [
                {
                    "name": "ray-worker",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "image": "docker.io/rayproject/ray:2.52.0",
                    "imageID": "docker.io/rayproject/ray@sha256:" + "ab" * 32,
                    "containerID": f"containerd://{i:064x}",
                    "state": {"running": {"startedAt": "2026-11-30T00:00:03Z"}},
                    "lastState": {},
                }
            ],
        },
    }


def measure(count: int) -> tuple[int, int]:
    """Returns (bytes of JSON per pod on the wire, bytes retained per cached pod)."""
    wire = [orjson.dumps(kuberay_pod(i)) for i in range(count)]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    store = Store()
    for payload in wire:
        store.upsert(prepare(orjson.loads(payload)))
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(store) == count
    return sum(map(len, wire)) // count, retained // count


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    wire_bytes, cached_bytes = measure(n)
    print(
        f"pods: {n}; JSON on the wire: {wire_bytes} B/pod; cached: {cached_bytes} B/pod ({cached_bytes / 1024:.1f} KB, target < 30 KB)"
    )
