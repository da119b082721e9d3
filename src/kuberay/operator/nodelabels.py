"""The mutating webhooks of Node Label Delivery (upstream v1.8, gate TopologyLabelDelivery; kuberay#5300's shape,
on #5329's flattened `workerGroupSpecs[].labelMappings`), served beside the validating ones when
ENABLE_WEBHOOKS is `true`; what they change is kuberay.builders.nodelabels.

- `mpod.kb.io` at `/mutate--v1-pod` (pods CREATE; registered for Ray pods only, failurePolicy Fail): a worker
  of a group with labelMappings gets the labels file step before `ray start`.
- `mbinding.kb.io` at `/mutate--v1-binding` (pods/binding CREATE; failurePolicy Ignore, since a Binding
  carries no labels for a selector and every pod's binding is sent): for such a worker, the mapped labels of
  the target Node that `allowedNodeLabels` allows go on the Binding as the `ray.io/topology-labels`
  annotation, which the API server merges into the pod. When one is missing, nothing is delivered and a
  Warning Event `RequiredNodeLabelMissing` is recorded on the pod (not on a dry run: sideEffects
  NoneOnDryRun).

Both always allow: they only add what delivery needs. The RayCluster comes from the operator's cache (a live
read when it is not there yet); the pod and the Node of a binding are read live (the pod may be newer than
the cache, and Nodes are not cached).
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from kuberay.builders import nodelabels
from kuberay.operator import webhooks
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.cache import Store
from kuberay.runtime.client import Client
from kuberay.runtime.errors import KubeError, NotFoundError
from kuberay.runtime.events import Recorder
from kuberay.runtime.resources import NODE, POD, ObjectKey
from kuberay.runtime.serving import HttpRequest, Reply

log = logging.getLogger("pod-mutating-webhook")

POD_PATH = "/mutate--v1-pod"
BINDING_PATH = "/mutate--v1-binding"


class NodeLabelDelivery:
    """The two webhooks over the operator's client, RayCluster cache and event recorder."""

    def __init__(self, client: Client, clusters: Store, recorder: Recorder | None, allowed: Sequence[str]) -> None:  # fmt: skip
        self._client = client
        self._clusters = clusters
        self._recorder = recorder
        self._allowed = tuple(allowed)

    def routes(self) -> dict[str, Any]:
        return {POD_PATH: self.mutate_pod, BINDING_PATH: self.mutate_binding}

    async def mutate_pod(self, request: HttpRequest) -> Reply:
        async def patch(admission: Mapping[str, Any]) -> list[dict[str, Any]]:
            pod = admission.get("object") or {}
            mappings = await self._mappings(pod, str(admission.get("namespace") or ""))
            return nodelabels.pod_patch(pod) if mappings else []

        return await _answer(request, patch)

    async def mutate_binding(self, request: HttpRequest) -> Reply:
        async def patch(admission: Mapping[str, Any]) -> list[dict[str, Any]]:
            binding = admission.get("object") or {}
            namespace, name = str(admission.get("namespace") or ""), str(admission.get("name") or "")
            node = str((binding.get("target") or {}).get("name") or "")
            try:
                pod = await self._client.get(POD, name, namespace)
                mappings = await self._mappings(pod, namespace)
                if not mappings or not node:
                    return []
                node_object = await self._client.get(NODE, node)
            except NotFoundError:
                return []
            labels = (node_object.get("metadata") or {}).get("labels") or {}
            delivered = nodelabels.delivery(mappings, labels, self._allowed)
            if delivered.missing:
                group = (nodelabels.worker_group(pod) or ("", ""))[1]
                message = nodelabels.missing_message(node, delivered.missing, group)
                log.info("pod %s/%s: %s", namespace, name, message)
                if self._recorder is not None and not admission.get("dryRun"):  # NoneOnDryRun
                    self._recorder.record(pod, "Warning", nodelabels.REQUIRED_NODE_LABEL_MISSING, message)
                return []
            log.info("pod %s/%s bound to %s: delivering %s", namespace, name, node, delivered.labels)
            return nodelabels.binding_patch(binding, delivered.labels)

        return await _answer(request, patch)

    async def _mappings(self, pod: Mapping[str, Any], namespace: str) -> list[dict[str, Any]]:
        group = nodelabels.worker_group(pod)
        if group is None:
            return []
        cluster: Mapping[str, Any] | None = self._clusters.get(ObjectKey(namespace, group[0]))
        if cluster is None:
            try:
                cluster = await self._client.get(RAYCLUSTER, group[0], namespace)
            except NotFoundError:
                return []
        return nodelabels.mappings_of(cluster, group[1])


async def _answer(request: HttpRequest, patch: Any) -> Reply:
    """An AdmissionReview answered allowed, with the JSONPatch `patch(request)` makes (if any). A read that
    fails answers 500, so the API server applies the webhook's failure policy."""
    parsed = webhooks.parse_review(request)
    if not isinstance(parsed, webhooks.AdmissionReview):
        return parsed
    admission = parsed.request
    try:
        ops = await patch(admission) if admission.get("operation") == "CREATE" else []
    except KubeError as e:
        log.error("%s %s/%s: %s", request.path, admission.get("namespace"), admission.get("name"), e)
        return 500, "text/plain", f"{e}\n".encode()
    response: dict[str, Any] = {"uid": parsed.uid, "allowed": True}
    if ops:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
    return parsed.answer(response)
