"""The apps/v1 StatefulSet controller: pods with stable names `<set>-<ordinal>`, made and removed in order.

Ordinals run from `spec.ordinals.start` (default 0). Each pod gets `hostname` = its name and
`subdomain` = `spec.serviceName` (so the headless Service names it), the labels `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and
`controller-revision-hash` (`<set>-<template hash>`), and one PersistentVolumeClaim per
`volumeClaimTemplates` entry, named `<claim>-<set>-<ordinal>`, kept when the pod goes unless
`persistentVolumeClaimRetentionPolicy` says `Delete` (`whenDeleted`: the claims are owned by the set;
`whenScaled`: a pod removed by a scale-down takes its claims with it, through the garbage collector).

With `podManagementPolicy: OrderedReady` (the default) ordinal N is created only once the lower ones are
Running and Ready (for `minReadySeconds`), and on scale-down the highest ordinal goes first, the next only
once it is gone; `Parallel` creates and deletes all at once. A `RollingUpdate` (the default, with
`partition`) replaces pods whose revision is not the update revision from the highest ordinal down to the
partition, one at a time, each only when every pod is healthy; a pod made below the partition gets the
current revision's template (read back from its ControllerRevision). `OnDelete` replaces a pod only when
someone deletes it. A failed pod is deleted and made again.

Status as upstream writes it and `kubectl rollout status` reads it: `replicas` (pods that exist),
`readyReplicas`, `availableReplicas`, `currentReplicas`, `updatedReplicas`, `currentRevision` (moved to
the update revision once every pod has it and is ready), `updateRevision`, `collisionCount`,
`observedGeneration`.
"""

from __future__ import annotations

import copy
import datetime
import re
from typing import Any

from localkube.controllers import podstate
from localkube.controllers.ownership import (
    REVISION_LABEL,
    controller_reference,
    pod_from_template,
    revision_label,
)
from localkube.controllers.replicaset import compact
from localkube.controllers.rollout import template_hash
from localkube.controllers.workload import OwningController
from localkube.server.errors import ApiError

STATEFULSETS_PREFIX = "/registry/apps/statefulsets/"
CLAIMS_PREFIX = "/registry/core/persistentvolumeclaims/"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal(set_name: str, pod: dict[str, Any]) -> int | None:
    """The ordinal in a pod's name `<set>-<ordinal>`; None for a name of another shape."""
    match = re.fullmatch(re.escape(set_name) + r"-(0|[1-9][0-9]*)", str(pod["metadata"].get("name", "")))
    return int(match.group(1)) if match else None


class StatefulSetController(OwningController):
    name = "statefulset-controller"
    owner_prefix = STATEFULSETS_PREFIX
    owner_kind = "StatefulSet"
    keeps_history = True

    def sync(self, key: str, statefulset: dict[str, Any], pods: list[dict[str, Any]]) -> float | None:
        spec = statefulset.get("spec") or {}
        status = copy.deepcopy(statefulset.get("status") or {})
        name = statefulset["metadata"]["name"]
        hash_value = template_hash(spec.get("template") or {}, int(status.get("collisionCount") or 0))
        update_revision = f"{name}-{hash_value}"
        self._record(statefulset, update_revision, hash_value)
        by_ordinal = {n: pod for pod in pods if (n := ordinal(name, pod)) is not None}
        now = self._clock()
        self._sync_pods(statefulset, by_ordinal, update_revision, now)
        recheck = self._write_status(key, statefulset, update_revision, now)
        in_use = {update_revision, str(status.get("currentRevision") or "")}
        self._prune(statefulset, in_use | {revision_label(p) for p in pods})
        return recheck

    def _healthy(self, statefulset: dict[str, Any], pod: dict[str, Any], now: datetime.datetime) -> bool:
        min_ready = int((statefulset.get("spec") or {}).get("minReadySeconds") or 0)
        return podstate.phase(pod) == "Running" and podstate.available(pod, min_ready, now)

    def _sync_pods(
        self,
        statefulset: dict[str, Any],
        pods: dict[int, dict[str, Any]],
        revision: str,
        now: datetime.datetime,
    ) -> None:
        """One step of upstream's `updateStatefulSet`: returns early wherever OrderedReady must wait."""
        spec = statefulset.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        for index in range(start, start + replicas):
            pod = pods.get(index)
            if (
                pod is not None
                and podstate.phase(pod) in ("Failed", "Succeeded")
                and not podstate.terminating(pod)
            ):
                self._delete_pod(statefulset, pod)
                if ordered:
                    return
                continue
            if pod is None:
                self._create(statefulset, index, *self._revision_for(statefulset, index, revision))
                if ordered:
                    return
                continue
            if ordered and not (not podstate.terminating(pod) and self._healthy(statefulset, pod, now)):
                return
        condemned = sorted((n for n in pods if not start <= n < start + replicas), reverse=True)
        for index in condemned:
            pod = pods[index]
            if podstate.terminating(pod):
                if ordered:
                    return
                continue
            if ordered and any(
                not self._healthy(statefulset, other, now) for n, other in pods.items() if n != index
            ):
                return
            if _retention(statefulset, "whenScaled") == "Delete":
                self._hand_claims_to(statefulset, pod)
            self._delete_pod(statefulset, pod)
            if ordered:
                return
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        for index in range(start + replicas - 1, start + partition - 1, -1):
            pod = pods.get(index)
            if pod is None:
                return
            if revision_label(pod) != revision and not podstate.terminating(pod):
                self._delete_pod(statefulset, pod)
                return
            if not self._healthy(statefulset, pod, now) or podstate.terminating(pod):
                return

    def _revision_for(
        self, statefulset: dict[str, Any], index: int, update_revision: str
    ) -> tuple[str, dict[str, Any] | None]:
        """The revision (and its template) a pod made now gets: below a RollingUpdate's partition the
        current one, so that a canary's untouched pods come back as they were; else the update one."""
        spec = statefulset.get("spec") or {}
        strategy = spec.get("updateStrategy") or {}
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        current = str((statefulset.get("status") or {}).get("currentRevision") or "")
        if strategy.get("type", "RollingUpdate") != "RollingUpdate" or index >= start + partition:
            return update_revision, None
        if not current or current == update_revision:
            return update_revision, None
        assert self._history is not None
        template = self._history.template(statefulset["metadata"]["namespace"], current)
        return (current, template) if template is not None else (update_revision, None)

    def _create(
        self, statefulset: dict[str, Any], index: int, revision: str, template: dict[str, Any] | None
    ) -> None:
        metadata, spec = statefulset["metadata"], statefulset.get("spec") or {}
        pod_name = f"{metadata['name']}-{index}"
        labels = {REVISION_LABEL: revision, POD_NAME_LABEL: pod_name, POD_INDEX_LABEL: str(index)}
        pod = pod_from_template(statefulset, labels=labels, name=pod_name, template=template)
        pod["spec"]["hostname"] = pod_name
        if spec.get("serviceName"):
            pod["spec"]["subdomain"] = spec["serviceName"]
        volumes = pod["spec"].setdefault("volumes", [])
        for claim in spec.get("volumeClaimTemplates") or []:
            claim_name = self._ensure_claim(statefulset, claim, pod_name)
            volumes[:] = [v for v in volumes if v.get("name") != claim["metadata"]["name"]]
            volumes.append(
                {"name": claim["metadata"]["name"], "persistentVolumeClaim": {"claimName": claim_name}}
            )
        if not volumes:
            del pod["spec"]["volumes"]
        self._create_pod(statefulset, pod)

    def _ensure_claim(self, statefulset: dict[str, Any], template: dict[str, Any], pod: str) -> str:
        """Makes the pod's claim from `template` unless it exists (it outlives its pods); returns its name."""
        name = f"{template['metadata']['name']}-{pod}"
        namespace = statefulset["metadata"]["namespace"]
        if self._store.get(f"{CLAIMS_PREFIX}{namespace}/{name}") is not None:
            return name
        selector_labels = ((statefulset.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        claim_metadata = copy.deepcopy(template.get("metadata") or {})
        claim_metadata.update(
            name=name,
            namespace=namespace,
            labels={**(claim_metadata.get("labels") or {}), **selector_labels},
        )
        if _retention(statefulset, "whenDeleted") == "Delete":
            claim_metadata["ownerReferences"] = [{**controller_reference(statefulset), "controller": False}]
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": claim_metadata,
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        try:
            self._api.create("", "persistentvolumeclaims", namespace, claim)
        except ApiError as err:
            if err.code != 409:
                raise
            return name
        message = f"create Claim {name} Pod {pod} in StatefulSet {statefulset['metadata']['name']} success"
        self._event(statefulset, "SuccessfulCreate", message)
        return name

    def _hand_claims_to(self, statefulset: dict[str, Any], pod: dict[str, Any]) -> None:
        """Makes a condemned pod the only owner of its claims, so they go with it (`whenScaled: Delete`)."""
        namespace = statefulset["metadata"]["namespace"]
        owner = {**controller_reference(pod), "controller": False}
        for template in (statefulset.get("spec") or {}).get("volumeClaimTemplates") or []:
            key = f"{CLAIMS_PREFIX}{namespace}/{template['metadata']['name']}-{pod['metadata']['name']}"
            claim = self._store.get(key)
            if claim is not None and claim["metadata"].get("ownerReferences") != [owner]:
                self._api.update(
                    key, {**claim, "metadata": {**claim["metadata"], "ownerReferences": [owner]}}
                )

    def _write_status(
        self, key: str, statefulset: dict[str, Any], update_revision: str, now: datetime.datetime
    ) -> float | None:
        fresh = self._store.get(key) or statefulset
        name = fresh["metadata"]["name"]
        previous = fresh.get("status") or {}
        spec = fresh.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        pods = [pod for pod in self._owned.owned(fresh["metadata"]["uid"]) if ordinal(name, pod) is not None]
        current_revision = previous.get("currentRevision") or update_revision
        live = [pod for pod in pods if not podstate.terminating(pod)]
        running_ready = [pod for pod in pods if podstate.phase(pod) == "Running" and podstate.ready(pod)]
        waits = [podstate.available_in(pod, min_ready, now) for pod in running_ready]
        status: dict[str, Any] = {
            "observedGeneration": fresh["metadata"].get("generation", 1),
            "replicas": len(pods),
            "readyReplicas": len(running_ready),
            "availableReplicas": sum(1 for wait in waits if wait == 0.0),
            "currentReplicas": sum(1 for pod in live if revision_label(pod) == current_revision),
            "updatedReplicas": sum(1 for pod in live if revision_label(pod) == update_revision),
            "currentRevision": current_revision,
            "updateRevision": update_revision,
            "collisionCount": int(previous.get("collisionCount") or 0),
        }
        replicas = int(spec.get("replicas", 1))
        if (
            (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
            and status["updatedReplicas"] == status["replicas"] == replicas
            and status["readyReplicas"] == replicas
        ) or (status["updatedReplicas"] == status["replicas"] == 0):
            status["currentRevision"] = update_revision
            status["currentReplicas"] = status["updatedReplicas"]
        status = compact(status, required=("replicas", "availableReplicas", "collisionCount"))
        return self._publish(key, fresh, status, waits)


def _retention(statefulset: dict[str, Any], when: str) -> str:
    policy = (statefulset.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    return str(policy.get(when) or "Retain")
