"""One case per validation rule of each kind: a change to a minimal valid object, then the path and
upstream's exact message of the first error (upstream reports only its first)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuberay.api import schemacheck
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.raycluster import RayCluster, RayClusterUpgradeStrategy
from kuberay.api.raycronjob import RayCronJob
from kuberay.api.rayjob import RayJob
from kuberay.api.rayservice import RayService
from kuberay.api.validation import (
    FieldError,
    autoscaler_v1_restart_policy_warning,
    event_reason,
    validate_raycluster,
    validate_raycronjob,
    validate_rayjob,
    validate_rayservice,
)

VALIDATORS: dict[str, tuple[Any, Callable[[Any, FeatureGates], list[FieldError]]]] = {
    "RayCluster": (RayCluster, validate_raycluster),
    "RayJob": (RayJob, validate_rayjob),
    "RayService": (RayService, validate_rayservice),
    "RayCronJob": (RayCronJob, validate_raycronjob),
}
DROP = object()
HEAD = "spec.headGroupSpec"
HEAD_C = f"{HEAD}.template.spec.containers[0]"
W0 = "spec.workerGroupSpecs[0]"
W0_C = f"{W0}.template.spec.containers[0]"
DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
DNS1123 = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
KEY_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
V2_HINT = (
    "idleTimeoutSeconds is set, but autoscaler v2 is not enabled. Please set .spec.autoscalerOptions.version "
    "to 'v2' (or set RAY_enable_autoscaler_v2 environment variable to 'true' in the head pod if using "
    "KubeRay < 1.4.0)"
)
TLS_AUTO = "when tlsOptions is set - the operator manages TLS configuration automatically"


def container(name: str) -> dict[str, Any]:
    return {"name": name, "image": "rayproject/ray:2.56.0"}


def cluster() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "demo"},
        "spec": {
            "rayVersion": "2.56.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [container("ray-head")]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "small",
                    "minReplicas": 0,
                    "maxReplicas": 4,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [container("ray-worker")]}},
                }
            ],
        },
    }


def put(obj: dict[str, Any], path: str, value: Any) -> None:
    """Sets (or, with DROP, removes) the value at a path such as ``spec.a[0].b`` or ``metadata.labels[k]``."""
    parts: list[str | int] = []
    for name, index, key in re.findall(r"([^.\[\]]+)|\[(\d+)\]|\[([^\]]+)\]", path):
        parts.append(name or (int(index) if index else key))
    node: Any = obj
    for part in parts[:-1]:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    if value is DROP:
        del node[parts[-1]]
    elif isinstance(node, list) and parts[-1] == len(node):
        node.append(copy.deepcopy(value))
    else:
        node[parts[-1]] = copy.deepcopy(value)


def errors(obj: dict[str, Any], gates: str = "") -> list[FieldError]:
    model, validate = VALIDATORS[obj["kind"]]
    return validate(model.parse(obj), FeatureGates.parse(gates))


def env(*names: str, value: str = "x") -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name in names]


def history(collector: dict[str, Any]) -> dict[str, Any]:
    return {"spec.historyServerOptions": {"collectorOptions": collector}}


def collector(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"image": "collector:1", "env": [{"name": n, "value": v} for n, v in pairs]}


AUTOSCALING = {"spec.enableInTreeAutoscaling": True}
V2 = {**AUTOSCALING, "spec.autoscalerOptions": {"version": "v2"}}
FT = {"spec.gcsFaultToleranceOptions": {"redisAddress": "redis:6379"}}
ROCKSDB = {"spec.gcsFaultToleranceOptions": {"backend": "rocksdb"}}
NETPOL = "RayClusterNetworkPolicy=true"
TLS = {"spec.tlsOptions": {"enabled": True}}
SECOND_GROUP = {"spec.workerGroupSpecs[1]": cluster()["spec"]["workerGroupSpecs"][0]}

# (id, changes, gates, path, message)
Case = tuple[str, dict[str, Any], str, str, str]
# fmt: off
CLUSTER_CASES: list[Case] = [
    ("name-length", {"metadata.name": "a" * 54}, "", "metadata.name", "RayCluster name should be no more than 53 characters"),
    ("name-dns1035", {"metadata.name": "1demo"}, "", "metadata.name", f"RayCluster name should be a valid DNS1035 label: [{DNS1035}]"),
    ("unique-group-names", SECOND_GROUP, "", "spec.workerGroupSpecs[1]", "worker group names must be unique"),
    ("head-containers", {f"{HEAD}.template.spec.containers": []}, "", f"{HEAD}.template.spec.containers", "headGroupSpec should have at least one container"),
    ("head-resources", {f"{HEAD}.rayStartParams": {"num-cpus": "1"}, f"{HEAD}.resources": {"CPU": "1"}}, "", f"{HEAD}.resources", "resource fields should not be set in both rayStartParams and Resources for Head group; please use only one"),
    ("head-labels-param", {f"{HEAD}.rayStartParams": {"labels": "a=b"}}, "", f"{HEAD}.rayStartParams[labels]", "rayStartParams['labels'] is not supported for Head group; please use the top-level Labels field instead"),
    ("head-label-key", {f"{HEAD}.labels": {"-bad": "ok"}}, "", f"{HEAD}.labels[-bad]", f"invalid label key for Head group: '-bad', error: {KEY_NAME}"),
    ("head-label-value", {f"{HEAD}.labels": {"zone": "a b"}}, "", f"{HEAD}.labels[zone]", f"invalid label value for key 'zone' in Head group: 'a b', error: {VALUE}"),
    ("head-label-value-length", {f"{HEAD}.labels": {"zone": "a" * 64}}, "", f"{HEAD}.labels[zone]", f"invalid label value for key 'zone' in Head group: '{'a' * 64}', error: must be no more than 63 bytes"),
    ("worker-containers", {f"{W0}.template.spec.containers": []}, "", f"{W0}.template.spec.containers", "workerGroupSpec should have at least one container"),
    ("worker-max-unset", {f"{W0}.maxReplicas": DROP}, "", f"{W0}.maxReplicas", "worker group small must set both minReplicas and maxReplicas when autoscaling is disabled"),
    ("worker-min-negative", {f"{W0}.minReplicas": -1}, "", f"{W0}.minReplicas", "worker group small has negative minReplicas -1"),
    ("worker-max-negative", {f"{W0}.maxReplicas": -2}, "", f"{W0}.maxReplicas", "worker group small has negative maxReplicas -2"),
    ("worker-min-over-max", {f"{W0}.minReplicas": 5}, "", f"{W0}.minReplicas", "worker group small has minReplicas 5 greater than maxReplicas 4"),
    ("worker-resources", {f"{W0}.rayStartParams": {"memory": "1"}, f"{W0}.resources": {"x": "1"}}, "", f"{W0}.resources", "resource fields should not be set in both rayStartParams and Resources for small group; please use only one"),
    ("worker-labels-param", {f"{W0}.rayStartParams": {"labels": ""}}, "", f"{W0}.rayStartParams[labels]", "rayStartParams['labels'] is not supported for small group; please use the top-level Labels field instead"),
    ("worker-label-key", {f"{W0}.labels": {"a/b/c": "v"}}, "", f"{W0}.labels[a/b/c]", "invalid label key for small group: 'a/b/c', error: a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"),
    ("worker-idle-negative", {f"{W0}.idleTimeoutSeconds": -1}, "", f"{W0}.idleTimeoutSeconds", "worker group small: idleTimeoutSeconds must be non-negative, got -1"),
    ("worker-idle-without-v2", {f"{W0}.idleTimeoutSeconds": 30}, "", f"{W0}.idleTimeoutSeconds", f"worker group small: {V2_HINT}"),
    ("priority-no-version", {f"{W0}.priority": 1, "spec.rayVersion": DROP}, "", f"{W0}.priority", "worker group small: priority is set, but RayVersion was not specified. Ray version 2.56.0 or later is required"),
    ("priority-bad-version", {f"{W0}.priority": 1, "spec.rayVersion": "latest"}, "", f"{W0}.priority", 'worker group small: priority is set, but RayVersion format is invalid: latest, could not parse "latest" as version'),
    ("priority-one-component", {f"{W0}.priority": 1, "spec.rayVersion": "2"}, "", f"{W0}.priority", 'worker group small: priority is set, but RayVersion format is invalid: 2, illegal version string "2"'),
    ("priority-old-version", {f"{W0}.priority": 1, "spec.rayVersion": "2.55.9"}, "", f"{W0}.priority", "worker group small: priority is set, but minimum Ray version is 2.56.0, got 2.55.9"),
    ("priority-without-v2", {f"{W0}.priority": 3}, "", f"{W0}.priority", "worker group small: priority is set to 3, but autoscaler v2 is not enabled. Priority is only supported with autoscaler v2 enabled"),
    ("ft-annotation-and-options", {**FT, "metadata.annotations": {"ray.io/ft-enabled": "false"}}, "", "metadata.annotations[ray.io/ft-enabled]", "ray.io/ft-enabled annotation and GcsFaultToleranceOptions are both set. Please use only GcsFaultToleranceOptions to configure GCS fault tolerance"),
    ("redis-address-without-ft", {f"{HEAD_C}.env": env("RAY_REDIS_ADDRESS")}, "", f"{HEAD_C}.env[0]", "RAY_REDIS_ADDRESS is set which implicitly enables GCS fault tolerance, but GcsFaultToleranceOptions is not set. Please set GcsFaultToleranceOptions to enable GCS fault tolerance"),
    ("ft-redis-password-param", {**FT, f"{HEAD}.rayStartParams": {"redis-password": "p"}}, "", f"{HEAD}.rayStartParams[redis-password]", "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead"),
    ("ft-redis-password-env", {**FT, f"{HEAD_C}.env": env("A", "REDIS_PASSWORD")}, "", f"{HEAD_C}.env[1]", "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead"),
    ("ft-redis-address-env", {**FT, f"{HEAD_C}.env": env("RAY_REDIS_ADDRESS")}, "", f"{HEAD_C}.env[0]", "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisAddress instead"),
    ("ft-storage-namespace-annotation", {**FT, "metadata.annotations": {"ray.io/external-storage-namespace": "ns"}}, "", "metadata.annotations[ray.io/external-storage-namespace]", "cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.ExternalStorageNamespace instead"),
    ("rocksdb-gate", ROCKSDB, "", "spec.gcsFaultToleranceOptions.backend", "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled"),
    *[(f"rocksdb-{key}", {"spec.gcsFaultToleranceOptions": {"backend": "rocksdb", key: value}}, "GCSFaultToleranceEmbeddedStorage=true", f"spec.gcsFaultToleranceOptions.{key}", f"cannot set GcsFaultToleranceOptions.{field} when backend is 'rocksdb'") for key, field, value in [("redisAddress", "RedisAddress", "redis:6379"), ("redisUsername", "RedisUsername", {"value": "u"}), ("redisPassword", "RedisPassword", {"value": "p"}), ("externalStorageNamespace", "ExternalStorageNamespace", "ns")] ],
    ("rocksdb-claim-exclusive", {"spec.gcsFaultToleranceOptions": {"backend": "rocksdb", "storage": {"claimName": "pvc", "accessModes": ["ReadWriteOnce"]}} }, "GCSFaultToleranceEmbeddedStorage=true", "spec.gcsFaultToleranceOptions.storage.claimName", "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, storageClassName, and accessModes"),
    ("rocksdb-env", {**ROCKSDB, f"{HEAD_C}.env": env("RAY_gcs_storage_path")}, "GCSFaultToleranceEmbeddedStorage=true", f"{HEAD_C}.env[0]", "cannot set `RAY_gcs_storage` or `RAY_gcs_storage_path` env var in head Pod when the embedded GCS FT backend is used - these are managed by KubeRay"),
    ("rocksdb-mount", {**ROCKSDB, f"{HEAD_C}.volumeMounts": [{"name": "data", "mountPath": "/data/gcs"}]}, "GCSFaultToleranceEmbeddedStorage=true", f"{HEAD_C}.volumeMounts[0]", 'cannot set a volume mount named "gcs-storage" or mounted at /data/gcs in the head container when the embedded GCS FT backend is used - it is managed by KubeRay'),
    ("rocksdb-volume", {**ROCKSDB, f"{HEAD}.template.spec.volumes": [{"name": "gcs-storage", "emptyDir": {}}]}, "GCSFaultToleranceEmbeddedStorage=true", f"{HEAD}.template.spec.volumes[0]", 'cannot set a volume named "gcs-storage" in the head Pod when the embedded GCS FT backend is used - it is managed by KubeRay'),
    ("active-passive-gate", {**FT, "spec.gcsFaultToleranceOptions.activePassiveOptions": {}}, "", "spec.gcsFaultToleranceOptions.activePassiveOptions", "activePassiveOptions requires the GCSFaultToleranceActivePassiveHead feature gate to be enabled"),
    ("active-passive-rocksdb", {**ROCKSDB, "spec.gcsFaultToleranceOptions.activePassiveOptions": {}}, "GCSFaultToleranceEmbeddedStorage=true,GCSFaultToleranceActivePassiveHead=true", "spec.gcsFaultToleranceOptions.activePassiveOptions", "activePassiveOptions is only supported with the 'redis' backend"),
    ("label-mappings-gate", {f"{W0}.labelMappings": [{"nodeLabel": "topology.kubernetes.io/zone"}]}, "", f"{W0}.labelMappings", "worker group small: labelMappings requires the TopologyLabelDelivery feature gate to be enabled"),
    ("redis-with-storage", {"spec.gcsFaultToleranceOptions": {"storage": {"size": "1Gi"}}}, "", "spec.gcsFaultToleranceOptions.storage", "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to the 'rocksdb' backend"),
    ("redis-username-param", {f"{HEAD}.rayStartParams": {"redis-username": "u"}}, "", f"{HEAD}.rayStartParams[redis-username]", "cannot set redis username in rayStartParams or environment variables - use GcsFaultToleranceOptions.RedisUsername instead"),
    ("redis-username-env", {f"{HEAD_C}.env": env("REDIS_USERNAME")}, "", f"{HEAD_C}.env[0]", "cannot set redis username in rayStartParams or environment variables - use GcsFaultToleranceOptions.RedisUsername instead"),
    ("suspend-without-gate", {f"{W0}.suspend": True}, "RayJobDeletionPolicy=false", f"{W0}.suspend", "worker group small can be suspended only when the RayJobDeletionPolicy feature gate is enabled"),
    ("v2-env-without-autoscaling", {f"{HEAD_C}.env": env("RAY_enable_autoscaler_v2", value="true")}, "", f"{HEAD_C}.env[0]", "environment variable RAY_enable_autoscaler_v2 cannot be set to 'true' when enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: true to use autoscaler v2"),
    ("suspend-with-autoscaler", {**AUTOSCALING, f"{W0}.suspend": True}, "", f"{W0}.suspend", "worker group small cannot be suspended with Autoscaler enabled"),
    ("version-and-v2-env", {**V2, f"{HEAD_C}.env": env("RAY_enable_autoscaler_v2", value="0")}, "", "spec.autoscalerOptions.version", "both .spec.autoscalerOptions.version and head Pod env var RAY_enable_autoscaler_v2 are set, please only use the former"),
    ("v2-head-restart-policy", {**V2, f"{HEAD}.template.spec.restartPolicy": "Always"}, "", f"{HEAD}.template.spec.restartPolicy", "restartPolicy for head Pod should be Never or unset when using autoscaler V2"),
    ("v2-worker-restart-policy", {**V2, f"{W0}.template.spec.restartPolicy": "OnFailure"}, "", f"{W0}.template.spec.restartPolicy", "restartPolicy for worker group small should be Never or unset when using autoscaler V2"),
    ("autoscaler-idle-negative", {"spec.autoscalerOptions": {"idleTimeoutSeconds": -5}}, "", "spec.autoscalerOptions.idleTimeoutSeconds", "autoscalerOptions.idleTimeoutSeconds must be non-negative, got -5"),
    ("autoscaler-start-cmd-env", {"spec.autoscalerOptions": {"env": env("KUBERAY_GEN_AUTOSCALER_START_CMD")}}, "", "spec.autoscalerOptions.env[0]", "autoscalerOptions.env must not contain KUBERAY_GEN_AUTOSCALER_START_CMD: it is managed by KubeRay and injected automatically into the autoscaler container"),
    ("history-gate", history(collector(("STORAGE_BACKEND", "S3"), ("S3_REGION", "x"))), "", "spec.historyServerOptions", "RayClusterHistoryServer feature gate is not enabled"),
    ("history-collector-unset", {"spec.historyServerOptions": {}}, "RayClusterHistoryServer=true", "spec.historyServerOptions.collectorOptions", "historyServerOptions.collectorOptions must be set"),
    ("collector-image", history({"env": []}), "RayClusterHistoryServer=true", "spec.historyServerOptions.collectorOptions.image", "historyServerOptions.collectorOptions.image must be set"),
    ("collector-managed-env", history(collector(("STORAGE_BACKEND", "S3"), ("RAY_ROLE", "head"))), "RayClusterHistoryServer=true", "spec.historyServerOptions.collectorOptions.env[1]", "historyServerOptions.collectorOptions.env must not contain RAY_ROLE: it is managed by KubeRay and injected automatically into the collector container"),
    ("collector-backend-unset", history({"image": "c", "env": [{"name": "STORAGE_BACKEND", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}} ]} ), "RayClusterHistoryServer=true", "spec.historyServerOptions.collectorOptions.env", "STORAGE_BACKEND environment variable must be set with a literal string value in historyServerOptions.collectorOptions.env"),
    ("collector-gcs", history(collector(("STORAGE_BACKEND", "gcs"))), "RayClusterHistoryServer=true", "spec.historyServerOptions.collectorOptions.env", "GCS_BUCKET environment variable must be set when STORAGE_BACKEND is GCS"),
    ("collector-s3", history(collector(("STORAGE_BACKEND", "S3"), ("S3_REGION", ""))), "RayClusterHistoryServer=true", "spec.historyServerOptions.collectorOptions.env", "S3_REGION environment variable must be set when STORAGE_BACKEND is S3"),
    ("collector-azure-connection-string", history(collector(("STORAGE_BACKEND", "AzureBlob"), ("AZURE_STORAGE_AUTH_MODE", " Connection_String ")) ), "RayClusterHistoryServer=true", "spec.historyServerOptions.collectorOptions.env", "AZURE_STORAGE_CONNECTION_STRING environment variable must be set when STORAGE_BACKEND is AZUREBLOB and AZURE_STORAGE_AUTH_MODE is connection_string"),
    ("collector-azure-account-url", history(collector(("STORAGE_BACKEND", "azureblob"), ("AZURE_STORAGE_AUTH_MODE", "default"))), "RayClusterHistoryServer=true", "spec.historyServerOptions.collectorOptions.env", "AZURE_STORAGE_ACCOUNT_URL environment variable must be set when STORAGE_BACKEND is AZUREBLOB and AZURE_STORAGE_AUTH_MODE is default"),
    ("collector-azure-either", history(collector(("STORAGE_BACKEND", "AZUREBLOB"))), "RayClusterHistoryServer=true", "spec.historyServerOptions.collectorOptions.env", "either AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_URL environment variable must be set when STORAGE_BACKEND is AZUREBLOB"),
    ("collector-oss-bucket", history(collector(("STORAGE_BACKEND", "aliyunoss"))), "RayClusterHistoryServer=true", "spec.historyServerOptions.collectorOptions.env", "OSS_BUCKET environment variable must be set when STORAGE_BACKEND is ALIYUNOSS"),
    ("collector-oss-endpoint", history(collector(("STORAGE_BACKEND", "ALIYUNOSS"), ("OSS_BUCKET", "b"))), "RayClusterHistoryServer=true", "spec.historyServerOptions.collectorOptions.env", "OSS_ENDPOINT environment variable must be set when STORAGE_BACKEND is ALIYUNOSS"),
    ("collector-oss-region", history(collector(("STORAGE_BACKEND", "ALIYUNOSS"), ("OSS_BUCKET", "b"), ("OSS_ENDPOINT", "e"))), "RayClusterHistoryServer=true", "spec.historyServerOptions.collectorOptions.env", "OSS_REGION environment variable must be set when STORAGE_BACKEND is ALIYUNOSS"),
    ("collector-head-container", {**history(collector(("STORAGE_BACKEND", "none"))), f"{HEAD}.template.spec.containers[1]": container("ray-history-collector")}, "RayClusterHistoryServer=true", f"{HEAD}.template.spec.containers[1].name", "head pod template must not define a container with name 'ray-history-collector' when history server collector options are enabled"),
    ("collector-worker-container", {**history(collector(("STORAGE_BACKEND", "none"))), f"{W0}.template.spec.containers[1]": container("ray-history-collector")}, "RayClusterHistoryServer=true", f"{W0}.template.spec.containers[1].name", "worker group small pod template must not define a container with name 'ray-history-collector' when history server collector options are enabled"),
    ("token-no-version", {"spec.authOptions": {"mode": "token"}, "spec.rayVersion": ""}, "", "spec.rayVersion", "authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or later is required"),
    ("token-bad-version", {"spec.authOptions": {"mode": "token"}, "spec.rayVersion": "nightly"}, "", "spec.rayVersion", "authOptions.mode is 'token' but RayVersion format is invalid: nightly, could not parse \"nightly\" as version"),
    ("token-old-version", {"spec.authOptions": {"mode": "token"}, "spec.rayVersion": "2.51.1"}, "", "spec.rayVersion", "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got 2.51.1"),
    ("k8s-token-old-version", {"spec.authOptions": {"mode": "token", "enableK8sTokenAuth": True}, "spec.rayVersion": "2.54.0"}, "", "spec.rayVersion", "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got 2.54.0"),
    ("k8s-token-secret", {"spec.authOptions": {"mode": "token", "enableK8sTokenAuth": True, "secretName": "s"}}, "", "spec.authOptions.secretName", "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set"),
    ("k8s-token-without-mode", {"spec.authOptions": {"enableK8sTokenAuth": True}}, "", "spec.authOptions.enableK8sTokenAuth", "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'"),
    ("netpol-gate", {"spec.networkPolicy": {}}, "", "spec.networkPolicy", "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled"),
    ("netpol-head-ingress", {"spec.networkPolicy": {"mode": "DenyAllEgress", "head": {"ingressRules": [{}]}}}, NETPOL, "spec.networkPolicy.head.ingressRules", 'networkPolicy.head.ingressRules cannot be set when mode is "DenyAllEgress" (ingress is not restricted)'),
    ("netpol-head-egress", {"spec.networkPolicy": {"mode": "DenyAllIngress", "head": {"egressRules": [{}]}}}, NETPOL, "spec.networkPolicy.head.egressRules", 'networkPolicy.head.egressRules cannot be set when mode is "DenyAllIngress" (egress is not restricted)'),
    ("netpol-worker-ingress", {"spec.networkPolicy": {"mode": "DenyAllEgress", "worker": {"ingressRules": [{}]}}}, NETPOL, "spec.networkPolicy.worker.ingressRules", 'networkPolicy.worker.ingressRules cannot be set when mode is "DenyAllEgress" (ingress is not restricted)'),
    ("netpol-worker-egress", {"spec.networkPolicy": {"mode": "DenyAllIngress", "worker": {"egressRules": [{}]}}}, NETPOL, "spec.networkPolicy.worker.egressRules", 'networkPolicy.worker.egressRules cannot be set when mode is "DenyAllIngress" (egress is not restricted)'),
    ("netpol-group-name", {"spec.networkPolicy": {}, f"{W0}.groupName": "Small"}, NETPOL, f"{W0}.groupName", f'worker group name "Small" must be a valid DNS1123 label when networkPolicy is enabled (it is embedded in the NetworkPolicy name): [{DNS1123}]'),
    ("netpol-group-name-dots", {"spec.networkPolicy": {}, f"{W0}.groupName": "a.b"}, NETPOL, f"{W0}.groupName", 'worker group name "a.b" must be a valid DNS1123 label when networkPolicy is enabled (it is embedded in the NetworkPolicy name): [must not contain dots]'),
    ("netpol-groups-ingress", {"spec.networkPolicy": {"mode": "DenyAllEgress", "workerGroups": [{"groupName": "small", "ingressRules": [{}]}]} }, NETPOL, "spec.networkPolicy.workerGroups[0].ingressRules", 'networkPolicy.workerGroups["small"].ingressRules cannot be set when mode is "DenyAllEgress" (ingress is not restricted)'),
    ("netpol-groups-egress", {"spec.networkPolicy": {"mode": "DenyAllIngress", "workerGroups": [{"groupName": "small", "egressRules": [{}]}]} }, NETPOL, "spec.networkPolicy.workerGroups[0].egressRules", 'networkPolicy.workerGroups["small"].egressRules cannot be set when mode is "DenyAllIngress" (egress is not restricted)'),
    ("netpol-groups-unknown", {"spec.networkPolicy": {"workerGroups": [{"groupName": "big"}]}}, NETPOL, "spec.networkPolicy.workerGroups[0].groupName", 'networkPolicy.workerGroups["big"] does not match any group name in workerGroupSpecs'),
    ("tls-gate", TLS, "", "spec.tlsOptions", "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled"),
    ("tls-head-env", {**TLS, f"{HEAD_C}.env": env("RAY_TLS_CA_CERT")}, "RayClusterMTLS=true", f"{HEAD_C}.env[0]", f"cannot set RAY_TLS_CA_CERT environment variable in head Pod {TLS_AUTO}"),
    ("tls-head-mount-name", {**TLS, f"{HEAD_C}.volumeMounts": [{"name": "ray-tls", "mountPath": "/x"}]}, "RayClusterMTLS=true", f"{HEAD_C}.volumeMounts[0]", f'cannot use volume mount named "ray-tls" in head Pod {TLS_AUTO}'),
    ("tls-head-mount-path", {**TLS, f"{HEAD_C}.volumeMounts": [{"name": "certs", "mountPath": "/etc/ray/tls"}]}, "RayClusterMTLS=true", f"{HEAD_C}.volumeMounts[0]", f'cannot use volume mount at path "/etc/ray/tls" in head Pod {TLS_AUTO}'),
    ("tls-worker-env", {**TLS, f"{W0_C}.env": env("RAY_USE_TLS")}, "RayClusterMTLS=true", f"{W0_C}.env[0]", f'cannot set RAY_USE_TLS environment variable in worker group "small" {TLS_AUTO}'),
    ("tls-worker-mount", {**TLS, f"{W0_C}.volumeMounts": [{"name": "ray-tls", "mountPath": "/x"}]}, "RayClusterMTLS=true", f"{W0_C}.volumeMounts[0]", f'cannot use volume mount named "ray-tls" in worker group "small" {TLS_AUTO}'),
    ("tls-autoscaler-env", {**TLS, "spec.autoscalerOptions": {"env": env("RAY_TLS_SERVER_KEY")}}, "RayClusterMTLS=true", "spec.autoscalerOptions.env[0]", "cannot set RAY_TLS_SERVER_KEY environment variable in autoscalerOptions.env when tlsOptions is set - the operator manages TLS configuration for the autoscaler automatically"),
    ("tls-autoscaler-mount", {**TLS, "spec.autoscalerOptions": {"volumeMounts": [{"name": "c", "mountPath": "/etc/ray/tls"}]}}, "RayClusterMTLS=true", "spec.autoscalerOptions.volumeMounts[0]", f'cannot use volume mount at path "/etc/ray/tls" in autoscalerOptions.volumeMounts {TLS_AUTO}'),
    ("upgrade-created-by-rayjob", {"spec.upgradeStrategy": {"type": "Recreate"}, "metadata.labels": {"ray.io/originated-from-crd": "RayJob"}}, "", "spec.upgradeStrategy.type", "upgradeStrategy cannot be set when RayCluster is created by RayJob"),
    ("upgrade-created-by-rayservice", {"spec.upgradeStrategy": {"type": "None"}, "metadata.labels": {"ray.io/originated-from-crd": "RayService"}}, "", "spec.upgradeStrategy.type", "upgradeStrategy cannot be set when RayCluster is created by RayService"),
    ("status-suspending-and-suspended", {"status.conditions": [{"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"} for t in ("RayClusterSuspending", "RayClusterSuspended") ] }, "", "status.conditions", "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should not be both true"),
]
# fmt: on


def head_only() -> dict[str, Any]:
    return {"headGroupSpec": {"template": {"spec": {"containers": [container("ray-head")]}}}}


def job() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "demo-job"},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": head_only(),
        },
    }


def service() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "demo-serve"},
        "spec": {"rayClusterConfig": head_only()},
    }


def cronjob() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": job()["spec"]},
    }


P = "The RayJob spec is invalid: "
S = "The RayService spec is invalid: "
RC = "spec.rayClusterSpec"
RULES_UNSHUT = {"spec.shutdownAfterJobFinishes": False}
SELECTOR = {"spec.rayClusterSpec": DROP, "spec.clusterSelector": {"ray.io/cluster": "shared"}}


def rule(policy: str, ttl: int = 0, **condition: str) -> dict[str, Any]:
    return {"policy": policy, "condition": {**condition, "ttlSeconds": ttl}}


def legacy(on_success: str, on_failure: str) -> dict[str, Any]:
    return {
        "spec.deletionStrategy": {"onSuccess": {"policy": on_success}, "onFailure": {"policy": on_failure}}
    }


# fmt: off
JOB_CASES: list[Case] = [
    ("name-length", {"metadata.name": "j" * 48}, "", "metadata.name", "The RayJob metadata is invalid: RayJob name should be no more than 47 characters"),
    ("name-dns1035", {"metadata.name": "job_1"}, "", "metadata.name", f"The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: [{DNS1035}]"),
    ("suspend-without-shutdown", {"spec.suspend": True, "spec.shutdownAfterJobFinishes": False}, "", "spec.suspend", f"{P}a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended"),
    ("ttl-negative", {"spec.ttlSecondsAfterFinished": -1}, "", "spec.ttlSecondsAfterFinished", f"{P}TTLSecondsAfterFinished must be a non-negative integer"),
    ("ttl-without-shutdown", {"spec.ttlSecondsAfterFinished": 10, **RULES_UNSHUT}, "", "spec.ttlSecondsAfterFinished", f"{P}a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished"),
    ("deletion-gate", legacy("DeleteCluster", "DeleteCluster"), "RayJobDeletionPolicy=false", "spec.deletionStrategy", "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy"),
    ("rules-with-shutdown", {"spec.deletionStrategy": {"deletionRules": [rule("DeleteCluster", jobStatus="SUCCEEDED")]}}, "", "spec.deletionStrategy.deletionRules", f"{P}spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are mutually exclusive"),
    ("rules-with-legacy", {**RULES_UNSHUT, "spec.deletionStrategy": {"onSuccess": {"policy": "DeleteSelf"}, "deletionRules": [rule("DeleteSelf", jobStatus="FAILED")]}}, "", "spec.deletionStrategy.deletionRules", f"{P}Cannot use both legacy onSuccess/onFailure fields and deletionRules simultaneously"),
    ("legacy-one-side", {"spec.deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}}}, "", "spec.deletionStrategy.onFailure", "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the legacy deletion policy fields of DeletionStrategy"),
    ("legacy-success-policy", {"spec.deletionStrategy": {"onSuccess": {}, "onFailure": {"policy": "DeleteCluster"}}}, "", "spec.deletionStrategy.onSuccess.policy", "the DeletionPolicyType field of DeletionStrategy.OnSuccess cannot be unset when DeletionStrategy is enabled"),
    ("legacy-failure-policy", {"spec.deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {}}}, "", "spec.deletionStrategy.onFailure.policy", "the DeletionPolicyType field of DeletionStrategy.OnFailure cannot be unset when DeletionStrategy is enabled"),
    ("legacy-selector-success", {**SELECTOR, **RULES_UNSHUT, **legacy("DeleteWorkers", "DeleteSelf")}, "", "spec.deletionStrategy.onSuccess.policy", "the ClusterSelector mode doesn't support DeletionStrategy=DeleteWorkers on success"),
    ("legacy-selector-failure", {**SELECTOR, **RULES_UNSHUT, **legacy("DeleteNone", "DeleteCluster")}, "", "spec.deletionStrategy.onFailure.policy", "the ClusterSelector mode doesn't support DeletionStrategy=DeleteCluster on failure"),
    ("legacy-workers-autoscaling", {f"{RC}.enableInTreeAutoscaling": True, **legacy("DeleteCluster", "DeleteWorkers")}, "", "spec.deletionStrategy.onFailure.policy", "DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling enabled"),
    ("legacy-delete-none-with-shutdown", legacy("DeleteNone", "DeleteCluster"), "", "spec.deletionStrategy.onSuccess.policy", f"{P}shutdownAfterJobFinshes is set to 'true' while deletion policy is 'DeleteNone'"),
    ("rule-both-statuses", {**RULES_UNSHUT, "spec.deletionStrategy": {"deletionRules": [rule("DeleteSelf", jobStatus="FAILED", jobDeploymentStatus="Failed")] }}, "", "spec.deletionStrategy.deletionRules[0].condition", "deletionRules[0]: cannot set both JobStatus and JobDeploymentStatus at the same time"),
    ("rule-no-status", {**RULES_UNSHUT, "spec.deletionStrategy": {"deletionRules": [rule("DeleteSelf", jobStatus="FAILED"), rule("DeleteSelf")] }}, "", "spec.deletionStrategy.deletionRules[1].condition", "deletionRules[1]: exactly one of JobStatus and JobDeploymentStatus must be set"),
    ("rule-ttl-negative", {**RULES_UNSHUT, "spec.deletionStrategy": {"deletionRules": [rule("DeleteSelf", -1, jobStatus="FAILED")]}}, "", "spec.deletionStrategy.deletionRules[0].condition.ttlSeconds", "deletionRules[0]: TTLSeconds must be non-negative"),
    ("rule-selector", {**SELECTOR, **RULES_UNSHUT, "spec.deletionStrategy": {"deletionRules": [rule("DeleteCluster", jobStatus="SUCCEEDED")]}}, "", "spec.deletionStrategy.deletionRules[0].policy", "deletionRules[0]: DeletionPolicyType 'DeleteCluster' not supported when ClusterSelector is set"),
    ("rule-workers-autoscaling", {**RULES_UNSHUT, f"{RC}.enableInTreeAutoscaling": True, "spec.deletionStrategy": {"deletionRules": [rule("DeleteWorkers", jobDeploymentStatus="Failed")]}}, "", "spec.deletionStrategy.deletionRules[0].policy", "deletionRules[0]: DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled"),
    ("rule-duplicate", {**RULES_UNSHUT, "spec.deletionStrategy": {"deletionRules": [rule("DeleteSelf", 5, jobDeploymentStatus="Failed"), rule("DeleteSelf", 9, jobDeploymentStatus="Failed")] }}, "", "spec.deletionStrategy.deletionRules[1]", "deletionRules[1]: duplicate rule for DeletionPolicyType 'DeleteSelf' and JobDeploymentStatus 'Failed'"),
    ("rule-ttl-order", {**RULES_UNSHUT, "spec.deletionStrategy": {"deletionRules": [rule("DeleteCluster", 10, jobStatus="SUCCEEDED"), rule("DeleteWorkers", 20, jobStatus="SUCCEEDED"), rule("DeleteNone", 0, jobStatus="SUCCEEDED")] }}, "", "spec.deletionStrategy.deletionRules", "for JobStatus 'SUCCEEDED': DeleteCluster TTL (10) must be >= DeleteWorkers TTL (20)"),
    ("strategy-empty", {"spec.deletionStrategy": {"deletionRules": []}}, "", "spec.deletionStrategy", f"{P}DeletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)"),
    ("suspend-with-selector", {**SELECTOR, "spec.suspend": True}, "", "spec.suspend", f"{P}the ClusterSelector mode doesn't support the suspend operation"),
    ("no-cluster", {"spec.rayClusterSpec": DROP}, "", "spec.rayClusterSpec", f"{P}one of RayClusterSpec or ClusterSelector must be set"),
    ("selector-without-name", {"spec.clusterSelector": {"team": "a"}}, "", "spec.clusterSelector[ray.io/cluster]", "cluster name in ClusterSelector should not be empty"),
    ("selector-sidecar", {**SELECTOR, "spec.submissionMode": "SidecarMode"}, "", "spec.clusterSelector", "ClusterSelector is not supported in SidecarMode"),
    ("selector-backoff", {**SELECTOR, "spec.backoffLimit": 1}, "", "spec.backoffLimit", f"{P}BackoffLimit is incompatible with ClusterSelector mode"),
    ("interactive-backoff", {"spec.submissionMode": "InteractiveMode", "spec.backoffLimit": 2}, "", "spec.backoffLimit", f"{P}BackoffLimit is incompatible with InteractiveMode"),
    ("sidecar-submitter-template", {"spec.submissionMode": "SidecarMode", "spec.submitterPodTemplate": {"spec": {"containers": [container("s")]}}}, "", "spec.submitterPodTemplate", "Currently, SidecarMode doesn't support SubmitterPodTemplate"),
    ("sidecar-submitter-config", {"spec.submissionMode": "SidecarMode", "spec.submitterConfig": {"backoffLimit": 1}}, "", "spec.submitterConfig", "Currently, SidecarMode doesn't support SubmitterConfig"),
    ("sidecar-restart-policy", {"spec.submissionMode": "SidecarMode", f"{RC}.headGroupSpec.template.spec.restartPolicy": "Always"}, "", f"{RC}.headGroupSpec.template.spec.restartPolicy", "restartPolicy for head Pod should be Never or unset when using SidecarMode"),
    ("k8s-token-auth", {f"{RC}.authOptions": {"mode": "token", "enableK8sTokenAuth": True}, f"{RC}.rayVersion": "2.55.0"}, "", f"{RC}.authOptions.enableK8sTokenAuth", f"{P}K8s token auth mode is currently not supported for RayJob"),
    ("cluster-spec", {f"{RC}.headGroupSpec.template.spec.containers": []}, "", f"{RC}.headGroupSpec.template.spec.containers", f"{P}headGroupSpec should have at least one container"),
    ("cluster-spec-annotations", {"metadata.annotations": {"ray.io/ft-enabled": "true"}, f"{RC}.gcsFaultToleranceOptions": {}}, "", "metadata.annotations[ray.io/ft-enabled]", f"{P}ray.io/ft-enabled annotation and GcsFaultToleranceOptions are both set. Please use only GcsFaultToleranceOptions to configure GCS fault tolerance"),
    ("runtime-env-not-mapping", {"spec.runtimeEnvYAML": "- pip"}, "", "spec.runtimeEnvYAML", "failed to unmarshal RuntimeEnvYAML: - pip: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type types.RuntimeEnvType"),
    ("runtime-env-scalar", {"spec.runtimeEnvYAML": "pip"}, "", "spec.runtimeEnvYAML", "failed to unmarshal RuntimeEnvYAML: pip: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type types.RuntimeEnvType"),
    ("active-deadline", {"spec.activeDeadlineSeconds": 0}, "", "spec.activeDeadlineSeconds", f"{P}activeDeadlineSeconds must be a positive integer"),
    ("pre-running-deadline", {"spec.preRunningDeadlineSeconds": -1}, "", "spec.preRunningDeadlineSeconds", f"{P}preRunningDeadlineSeconds must be a positive integer"),
    ("backoff-negative", {"spec.backoffLimit": -1}, "", "spec.backoffLimit", f"{P}backoffLimit must be a positive integer"),
    ("status-waiting", {"status.jobDeploymentStatus": "Waiting"}, "", "status.jobDeploymentStatus", "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode is not InteractiveMode"),
]
# fmt: on

INCREMENTAL = {
    "spec.rayClusterConfig.enableInTreeAutoscaling": True,
    "spec.upgradeStrategy": {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {"stepSizePercent": 10, "intervalSeconds": 30, "gatewayClassName": "istio"},
    },
}
CUO = "spec.upgradeStrategy.clusterUpgradeOptions"
TIMEOUT = "metadata.annotations[ray.io/initializing-timeout]"
TIMEOUT_INVALID = "The RayService metadata is invalid: RayService annotations is invalid: annotation ray.io/initializing-timeout"

# fmt: off
SERVICE_CASES: list[Case] = [
    ("name-length", {"metadata.name": "s" * 48}, "", "metadata.name", "The RayService metadata is invalid: RayService name should be no more than 47 characters"),
    ("name-dns1035", {"metadata.name": "Serve"}, "", "metadata.name", f"The RayService metadata is invalid: RayService name should be a valid DNS1035 label: [{DNS1035}]"),
    ("timeout-zero-duration", {"metadata.annotations": {"ray.io/initializing-timeout": "0"}}, "", TIMEOUT, f"{TIMEOUT_INVALID} must be a positive duration, got: 0"),
    ("timeout-negative-duration", {"metadata.annotations": {"ray.io/initializing-timeout": "-1m"}}, "", TIMEOUT, f"{TIMEOUT_INVALID} must be a positive duration, got: -1m"),
    ("timeout-negative-seconds", {"metadata.annotations": {"ray.io/initializing-timeout": "-30"}}, "", TIMEOUT, f"{TIMEOUT_INVALID} must be a positive integer (seconds), got: -30"),
    ("timeout-format", {"metadata.annotations": {"ray.io/initializing-timeout": "5 minutes"}}, "", TIMEOUT, f"{TIMEOUT_INVALID} has invalid format: 5 minutes. Expected Go duration format (e.g., '5m', '1h') or positive integer seconds"),
    ("k8s-token-auth", {"spec.rayClusterConfig.authOptions": {"mode": "token", "enableK8sTokenAuth": True}}, "", "spec.rayClusterConfig.authOptions.enableK8sTokenAuth", f"{S}K8s token auth mode is currently not supported for RayService"),
    ("cluster-spec", {"spec.rayClusterConfig.headGroupSpec.template.spec.containers": []}, "", "spec.rayClusterConfig.headGroupSpec.template.spec.containers", f"{S}headGroupSpec should have at least one container"),
    ("head-service-name", {"spec.rayClusterConfig.headGroupSpec.headService": {"metadata": {"name": "mine"}}}, "", "spec.rayClusterConfig.headGroupSpec.headService.metadata.name", f"{S}spec.rayClusterConfig.headGroupSpec.headService.metadata.name should not be set"),
    ("upgrade-type", {"spec.upgradeStrategy": {"type": "BlueGreen"}}, "", "spec.upgradeStrategy.type", f"{S}Spec.UpgradeStrategy.Type value BlueGreen is invalid, valid options are NewClusterWithIncrementalUpgrade, NewCluster, or None"),
    ("deletion-delay", {"spec.rayClusterDeletionDelaySeconds": -1}, "", "spec.rayClusterDeletionDelaySeconds", f"{S}Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, got -1"),
    ("incremental-autoscaler", {**INCREMENTAL, "spec.rayClusterConfig.enableInTreeAutoscaling": False}, "", "spec.rayClusterConfig.enableInTreeAutoscaling", f"{S}Ray Autoscaler is required for NewClusterWithIncrementalUpgrade"),
    ("incremental-options", {**INCREMENTAL, "spec.upgradeStrategy": {"type": "NewClusterWithIncrementalUpgrade"}}, "", CUO, f"{S}ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade"),
    ("incremental-max-surge", {**INCREMENTAL, f"{CUO}.maxSurgePercent": 101}, "", f"{CUO}.maxSurgePercent", f"{S}maxSurgePercent must be between 0 and 100"),
    ("incremental-step-size", {**INCREMENTAL, f"{CUO}.stepSizePercent": -1}, "", f"{CUO}.stepSizePercent", f"{S}stepSizePercent must be between 0 and 100"),
    ("incremental-step-over-surge", {**INCREMENTAL, f"{CUO}.maxSurgePercent": 20, f"{CUO}.stepSizePercent": 30}, "", f"{CUO}.stepSizePercent", f"{S}stepSizePercent must be less than or equal to maxSurgePercent"),
    ("incremental-interval", {**INCREMENTAL, f"{CUO}.intervalSeconds": 0}, "", f"{CUO}.intervalSeconds", f"{S}intervalSeconds must be greater than 0"),
    ("incremental-gateway-class", {**INCREMENTAL, f"{CUO}.gatewayClassName": ""}, "", f"{CUO}.gatewayClassName", f"{S}gatewayClassName is required for NewClusterWithIncrementalUpgrade"),
]
# fmt: on

T = "invalid RayJob template: "
# fmt: off
CRONJOB_CASES: list[Case] = [
    ("name-length", {"metadata.name": "c" * 37}, "", "metadata.name", "RayCronJob name should be no more than 36 characters"),
    ("schedule-tz", {"spec.schedule": "CRON_TZ=UTC 0 3 * * *"}, "", "spec.schedule", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
    ("schedule-empty", {"spec.schedule": ""}, "", "spec.schedule", "invalid cron schedule: empty spec string"),
    ("schedule-fields", {"spec.schedule": "0 3 * *"}, "", "spec.schedule", "invalid cron schedule: expected exactly 5 fields, found 4: [0 3 * *]"),
    ("schedule-range", {"spec.schedule": "0 24 * * *"}, "", "spec.schedule", "invalid cron schedule: end of range (24) above maximum (23): 24"),
    ("schedule-descriptor", {"spec.schedule": "@fortnightly"}, "", "spec.schedule", "invalid cron schedule: unrecognized descriptor: @fortnightly"),
    ("schedule-every", {"spec.schedule": "@every 5x"}, "", "spec.schedule", 'invalid cron schedule: failed to parse duration @every 5x: time: unknown unit "x" in duration "5x"'),
    ("time-zone-empty", {"spec.timeZone": ""}, "", "spec.timeZone", "timeZone must not be empty string, omit the field to use the local time zone of the KubeRay operator"),
    ("time-zone-unknown", {"spec.timeZone": "Mars/Olympus_Mons"}, "", "spec.timeZone", "invalid time zone: unknown time zone Mars/Olympus_Mons"),
    ("template-cluster", {"spec.jobTemplate.rayClusterSpec": DROP}, "", "spec.jobTemplate.rayClusterSpec", f"{T}{P}one of RayClusterSpec or ClusterSelector must be set"),
    ("template-cluster-spec", {"spec.jobTemplate.rayClusterSpec.headGroupSpec.template.spec.containers": []}, "", "spec.jobTemplate.rayClusterSpec.headGroupSpec.template.spec.containers", f"{T}{P}headGroupSpec should have at least one container"),
]
# fmt: on


RULES = [
    pytest.param(base, *case[1:], id=f"{base.__name__}-{case[0]}")
    for base, cases in (
        (cluster, CLUSTER_CASES),
        (job, JOB_CASES),
        (service, SERVICE_CASES),
        (cronjob, CRONJOB_CASES),
    )
    for case in cases
]


@pytest.mark.parametrize("base", [cluster, job, service, cronjob])
def test_minimal_objects_are_valid(base: Callable[[], dict[str, Any]]) -> None:
    assert errors(base()) == []


@pytest.mark.parametrize(("base", "changes", "gates", "path", "message"), RULES)
def test_rule(
    base: Callable[[], dict[str, Any]], changes: dict[str, Any], gates: str, path: str, message: str
) -> None:
    obj = base()
    for at, value in changes.items():
        put(obj, at, value)
    assert errors(obj, gates)[0] == FieldError(path, message)


# fmt: off
ALLOWED = [
    pytest.param(cluster, {f"{W0}.idleTimeoutSeconds": 30, **V2}, "", id="cluster-idle-v2"),
    pytest.param(cluster, {f"{W0}.idleTimeoutSeconds": 30, **AUTOSCALING, f"{HEAD_C}.env": env("RAY_enable_autoscaler_v2", value="1")}, "", id="cluster-idle-v2-env"),
    pytest.param(cluster, {f"{W0}.priority": 2, **V2}, "", id="cluster-priority-v2"),
    pytest.param(cluster, {f"{W0}.maxReplicas": DROP, **AUTOSCALING}, "", id="cluster-autoscaling-no-max"),
    pytest.param(cluster, {**FT, "metadata.annotations": {"ray.io/ft-enabled": ""}}, "", id="cluster-ft-annotation-empty"),
    pytest.param(cluster, {"metadata.annotations": {"ray.io/ft-enabled": "TRUE"}, f"{HEAD_C}.env": env("RAY_REDIS_ADDRESS")}, "", id="cluster-ft-by-annotation"),
    pytest.param(cluster, {"spec.authOptions": {"mode": "token", "enableK8sTokenAuth": True}, "spec.rayVersion": "v2.55"}, "", id="cluster-k8s-token-v-prefix"),
    pytest.param(cluster, {"spec.authOptions": {}}, "", id="cluster-auth-empty"),
    pytest.param(cluster, {**AUTOSCALING, "spec.autoscalerOptions": {"version": "v1"}, f"{HEAD}.template.spec.restartPolicy": "Always"}, "", id="cluster-v1-restart-policy"),
    pytest.param(cluster, {"spec.tlsOptions": {"enabled": False}, f"{HEAD_C}.env": env("RAY_USE_TLS")}, "RayClusterMTLS=true", id="cluster-tls-disabled"),
    pytest.param(cluster, {"spec.networkPolicy": {"head": {"ingressRules": [{}], "egressRules": [{}]}}}, NETPOL, id="cluster-netpol-deny-all"),
    pytest.param(cluster, {**FT, "spec.gcsFaultToleranceOptions.activePassiveOptions": {"leaseDurationSeconds": 30}, f"{W0}.labelMappings": [{"nodeLabel": "nvidia.com/gpu.clique", "mapTo": "ray.io/accelerator-domain"}], f"{W0}.scaleStrategy": {"scaleGate": [{"name": "kueue.k8s.io/quota-exceeded"}]}}, "GCSFaultToleranceActivePassiveHead=true,TopologyLabelDelivery=true", id="cluster-v1.8-fields-gates-on"),
    pytest.param(job, {"spec.submissionMode": "InteractiveMode", "status.jobDeploymentStatus": "Waiting"}, "", id="job-interactive-waiting"),
    pytest.param(job, {**RULES_UNSHUT, "spec.deletionStrategy": {"deletionRules": [rule("DeleteWorkers", 1, jobStatus="FAILED"), rule("DeleteCluster", 1, jobStatus="FAILED"), rule("DeleteSelf", 9, jobStatus="FAILED"), rule("DeleteSelf", 0, jobStatus="SUCCEEDED")]}}, "", id="job-deletion-rules"),
    pytest.param(job, {**SELECTOR, "spec.clusterSelector": {}, "spec.rayClusterSpec": head_only()}, "", id="job-empty-selector"),
    pytest.param(job, {"spec.runtimeEnvYAML": "pip:\n  - requests\n"}, "", id="job-runtime-env"),
    pytest.param(job, {"spec.submissionMode": "Anything"}, "", id="job-unknown-submission-mode"),
    pytest.param(service, {"metadata.annotations": {"ray.io/initializing-timeout": "300"}}, "", id="service-timeout-seconds"),
    pytest.param(service, {"metadata.annotations": {"ray.io/initializing-timeout": "1h30m"}}, "", id="service-timeout-duration"),
    pytest.param(service, {**INCREMENTAL, f"{CUO}.gatewayClassName": ""}, "RayServiceIncrementalUpgrade=false", id="service-incremental-gate-off"),
    pytest.param(cronjob, {"spec.schedule": "*/15 9-17 * jan-jun mon,wed", "spec.timeZone": "Europe/Paris"}, "", id="cronjob-schedule"),
    pytest.param(cronjob, {"spec.schedule": "@every 1h30m", "spec.timeZone": "UTC"}, "", id="cronjob-every"),
    pytest.param(cronjob, {"metadata.name": "Not_A_DNS_Name"}, "", id="cronjob-name-not-dns-checked"),
]
# fmt: on


@pytest.mark.parametrize(("base", "changes", "gates"), ALLOWED)
def test_allowed(base: Callable[[], dict[str, Any]], changes: dict[str, Any], gates: str) -> None:
    obj = base()
    for at, value in changes.items():
        put(obj, at, value)
    assert errors(obj, gates) == []


def test_upgrade_type_outside_the_enum() -> None:
    # The CRD enum stops this at admission; upstream checks it anyway for objects built in code.
    built = RayCluster.parse(cluster())
    built.spec.upgrade_strategy = RayClusterUpgradeStrategy(type="Recreate")
    built.spec.upgrade_strategy.type = "Rolling"  # type: ignore[assignment]
    assert validate_raycluster(built, FeatureGates()) == [
        FieldError(
            "spec.upgradeStrategy.type",
            "The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value Rolling is invalid, valid options "
            "are Recreate or None",
        )
    ]


def test_every_failure_is_reported_in_upstream_order() -> None:
    obj = cluster()
    put(obj, "metadata.name", "Demo")
    put(obj, f"{W0}.minReplicas", -1)
    put(obj, "spec.upgradeStrategy", {"type": "None"})
    put(obj, "metadata.labels", {"ray.io/originated-from-crd": "RayService"})
    assert [e.path for e in errors(obj)] == [
        "metadata.name",
        f"{W0}.minReplicas",
        "spec.upgradeStrategy.type",
    ]


def test_several_bad_labels_each_name_their_key() -> None:
    obj = cluster()
    put(obj, f"{HEAD}.labels", {"ok": "fine", "bad key": "v", "k": "bad value"})
    assert [e.path for e in errors(obj)] == [f"{HEAD}.labels[bad key]", f"{HEAD}.labels[k]"]


def test_str_is_path_then_message() -> None:
    assert str(FieldError("spec.x", "broken")) == "spec.x: broken"


@pytest.mark.parametrize(
    ("base", "changes", "reason"),
    [
        (cluster, {"metadata.name": "Demo"}, "InvalidRayClusterMetadata"),
        (cluster, {**FT, "metadata.annotations": {"ray.io/ft-enabled": "true"}}, "InvalidRayClusterSpec"),
        (
            cluster,
            {
                "spec.upgradeStrategy": {"type": "None"},
                "metadata.labels": {"ray.io/originated-from-crd": "RayJob"},
            },
            "InvalidRayClusterSpec",
        ),
        (job, {"status.jobDeploymentStatus": "Waiting"}, "InvalidRayJobStatus"),
        (job, {"spec.backoffLimit": -1}, "InvalidRayJobSpec"),
        (
            service,
            {"metadata.annotations": {"ray.io/initializing-timeout": "soon"}},
            "InvalidRayServiceMetadata",
        ),
        (cronjob, {"metadata.name": "c" * 40}, "InvalidRayCronJobSpec"),
    ],
)
def test_event_reason_follows_the_upstream_stage(
    base: Callable[[], dict[str, Any]], changes: dict[str, Any], reason: str
) -> None:
    obj = base()
    for at, value in changes.items():
        put(obj, at, value)
    assert event_reason(obj["kind"], errors(obj)[0]) == reason


def test_autoscaler_v1_restart_policy_is_a_warning_not_an_error() -> None:
    obj = cluster()
    put(obj, "spec.workerGroupSpecs[1]", {**obj["spec"]["workerGroupSpecs"][0], "groupName": "big"})
    for group in (0, 1):
        put(obj, f"spec.workerGroupSpecs[{group}].template.spec.restartPolicy", "OnFailure")
    assert autoscaler_v1_restart_policy_warning(RayCluster.parse(obj)) is None  # autoscaling off
    put(obj, "spec.enableInTreeAutoscaling", True)
    put(obj, "spec.autoscalerOptions", {"version": "v1"})
    assert errors(obj) == []
    assert autoscaler_v1_restart_policy_warning(RayCluster.parse(obj)) == (
        "restartPolicy for worker groups [small, big] should be Never or unset when using autoscaler V1"
    )


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(["", "x", "true", "v2", "token", "rocksdb"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["name", "value", "a"]), inner, max_size=3)
    ),
    max_leaves=6,
)
ODD_PLACES = [
    f"{HEAD}.template.spec",
    f"{HEAD}.template.spec.containers",
    f"{HEAD_C}.env",
    f"{HEAD_C}.volumeMounts",
    f"{W0}.template",
    f"{W0}.labels",
    "spec.autoscalerOptions",
    "spec.gcsFaultToleranceOptions",
    "spec.networkPolicy",
    "spec.historyServerOptions",
    "spec.authOptions",
    "status",
]


@settings(max_examples=150, deadline=None)
@given(place=st.sampled_from(ODD_PLACES), value=JSON_VALUES)
def test_odd_shapes_never_crash_the_checks(place: str, value: Any) -> None:
    obj = cluster()
    put(obj, place, value)
    schemacheck.check(obj, "RayCluster")
    try:
        model = RayCluster.parse(obj)
    except pydantic.ValidationError:
        return
    all_gates = FeatureGates.parse(",".join(f"{feature}=true" for feature in Feature))
    validate_raycluster(model, all_gates)
