"""The resource registry: every kind the server serves, built-in or defined by a CustomResourceDefinition.

A `ResourceType` is one group/version/resource with everything the REST layer, discovery, OpenAPI and
Table output need to know about it. Built-in types are fixed; custom types are rebuilt from the stored
CRDs whenever one changes (`Registry.sync_crds`), so a CRD's resources are served as soon as it is stored.

Storage keys are version-independent (`/registry/<group or core>/<plural>/[<namespace>/]<name>`): every
served version of a resource reads and writes the same objects, as with a CRD whose conversion is `None`.
events.k8s.io Events are stored as the core Events they are views of, autoscaling/v1 HorizontalPodAutoscalers
as the autoscaling/v2 ones (`stored_as`: the stored resource's group, version and plural).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class ScalePaths:
    """Where a resource keeps the numbers its `/scale` subresource reads and writes (JSON paths)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = None


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    scale: ScalePaths | None = None
    verbs: tuple[str, ...] = ALL_VERBS
    # Served by a handler of its own, never stored (access reviews, token reviews).
    virtual: bool = False
    # Set for custom resources: the version's openAPIV3Schema, printer columns and CEL-bearing schema.
    custom: bool = False
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    printer_columns: tuple[PrinterColumn, ...] = ()
    # Stored as another resource's objects and converted on the way (events.k8s.io Events are core ones).
    stored_as: tuple[str, str, str] | None = None
    # A custom resource's storage version (discovery hashes it).
    storage_version: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    def _base(self) -> str:
        group, _, plural = self.stored_as or (self.group, self.version, self.plural)
        return f"/registry/{group or 'core'}/{plural}/"

    def prefix(self, namespace: str | None) -> str:
        """The storage prefix of every object of this resource, or of those in one namespace."""
        base = self._base()
        return base + f"{namespace}/" if self.namespaced and namespace else base

    def key(self, namespace: str | None, name: str) -> str:
        base = self._base()
        return base + f"{namespace}/{name}" if self.namespaced else base + name

    def has_status(self) -> bool:
        return "status" in self.subresources


def _builtin(
    group: str,
    version: str,
    kind: str,
    plural: str,
    *,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    scale: ScalePaths | None = None,
    verbs: tuple[str, ...] = ALL_VERBS,
    virtual: bool = False,
) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=kind.lower(),
        namespaced=namespaced,
        short_names=short,
        categories=categories,
        subresources=frozenset(sub + (("scale",) if scale else ())),
        scale=scale,
        verbs=verbs,
        virtual=virtual,
    )


_REPLICAS = ScalePaths(label_selector=".spec.selector")
_REVIEW = ("create",)

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _builtin("", "v1", "Namespace", "namespaces", namespaced=False, short=("ns",), sub=("status", "finalize")),
    _builtin("", "v1", "Pod", "pods", short=("po",), categories=("all",), sub=("status", "log", "binding", "exec", "attach", "portforward")),
    _builtin("", "v1", "Service", "services", short=("svc",), categories=("all",), sub=("status",)),
    _builtin("", "v1", "Endpoints", "endpoints", short=("ep",)),
    _builtin("", "v1", "ConfigMap", "configmaps", short=("cm",)),
    _builtin("", "v1", "Secret", "secrets"),
    _builtin("", "v1", "ServiceAccount", "serviceaccounts", short=("sa",), sub=("token",)),
    _builtin("", "v1", "Event", "events", short=("ev",)),
    _builtin("", "v1", "Node", "nodes", namespaced=False, short=("no",), sub=("status",)),
    _builtin("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", short=("pvc",), sub=("status",)),
    _builtin("", "v1", "PersistentVolume", "persistentvolumes", namespaced=False, short=("pv",), sub=("status",)),
    _builtin("", "v1", "ResourceQuota", "resourcequotas", short=("quota",), sub=("status",)),
    _builtin("", "v1", "LimitRange", "limitranges", short=("limits",)),
    _builtin("apps", "v1", "Deployment", "deployments", short=("deploy",), categories=("all",), sub=("status",), scale=_REPLICAS),
    _builtin("apps", "v1", "StatefulSet", "statefulsets", short=("sts",), categories=("all",), sub=("status",), scale=_REPLICAS),
    _builtin("apps", "v1", "ReplicaSet", "replicasets", short=("rs",), categories=("all",), sub=("status",), scale=_REPLICAS),
    _builtin("apps", "v1", "DaemonSet", "daemonsets", short=("ds",), categories=("all",), sub=("status",)),
    _builtin("apps", "v1", "ControllerRevision", "controllerrevisions"),
    _builtin("batch", "v1", "Job", "jobs", categories=("all",), sub=("status",)),
    _builtin("batch", "v1", "CronJob", "cronjobs", short=("cj",), categories=("all",), sub=("status",)),
    _builtin("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", short=("hpa",), categories=("all",), sub=("status",)),
    replace(_builtin("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", short=("hpa",), categories=("all",), sub=("status",)), stored_as=("autoscaling", "v2", "horizontalpodautoscalers")),
    _builtin("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", short=("pdb",), sub=("status",)),
    _builtin("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices"),
    replace(_builtin("events.k8s.io", "v1", "Event", "events", short=("ev",)), stored_as=("", "v1", "events")),
    _builtin("networking.k8s.io", "v1", "Ingress", "ingresses", short=("ing",), sub=("status",)),
    _builtin("networking.k8s.io", "v1", "IngressClass", "ingressclasses", namespaced=False),
    _builtin("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", short=("netpol",)),
    _builtin("coordination.k8s.io", "v1", "Lease", "leases"),
    _builtin("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", namespaced=False, short=("pc",)),
    # Served, as kube-apiserver does, for its readers (Kueue's workload controller watches it for pod overhead);
    # the simulated and process nodes run every pod under the one runtime and read no handler.
    _builtin("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", namespaced=False),
    _builtin("storage.k8s.io", "v1", "StorageClass", "storageclasses", namespaced=False, short=("sc",)),
    _builtin("rbac.authorization.k8s.io", "v1", "Role", "roles"),
    _builtin("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
    _builtin("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False),
    _builtin("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False),
    _builtin("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", namespaced=False, categories=("api-extensions",)),
    _builtin("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", namespaced=False, categories=("api-extensions",)),
    _builtin("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False, short=("crd", "crds"), sub=("status",)),
    _builtin("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", namespaced=False, verbs=_REVIEW, virtual=True),
    _builtin("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False, verbs=_REVIEW, virtual=True),
    _builtin("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", namespaced=False, verbs=_REVIEW, virtual=True),
    _builtin("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", namespaced=False, verbs=_REVIEW, virtual=True),
    _builtin("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", namespaced=False, verbs=_REVIEW, virtual=True),
)  # fmt: skip

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes' version order: GA before beta before alpha, higher numbers first (as a sort key)."""
    match = _VERSION_RE.match(version)
    if match is None:
        return (3, 0, 0)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0))


def crd_types(crd: dict[str, Any]) -> list[ResourceType]:
    """The served versions of one stored CRD, preferred version first."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out: list[ResourceType] = []
    storage = next((v.get("name", "") for v in spec.get("versions") or [] if v.get("storage")), "")
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        scale = subresources.get("scale")
        columns = tuple(
            PrinterColumn(
                name=column["name"],
                type=column.get("type", "string"),
                json_path=column.get("jsonPath", ""),
                description=column.get("description", ""),
                priority=int(column.get("priority", 0)),
                format=column.get("format", ""),
            )
            for column in version.get("additionalPrinterColumns") or []
        )
        out.append(
            ResourceType(
                group=spec.get("group", ""),
                version=version["name"],
                kind=names.get("kind", ""),
                plural=names.get("plural", ""),
                singular=names.get("singular") or names.get("kind", "").lower(),
                namespaced=spec.get("scope") != "Cluster",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=frozenset(name for name in ("status", "scale") if name in subresources),
                scale=ScalePaths(
                    spec_replicas=scale["specReplicasPath"],
                    status_replicas=scale["statusReplicasPath"],
                    label_selector=scale.get("labelSelectorPath"),
                )
                if scale
                else None,
                custom=True,
                storage_version=storage,
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
                printer_columns=columns,
            )
        )
    out.sort(key=lambda t: version_priority(t.version))
    return out


class Registry:
    """Lookups by group/version/resource and by kind, over built-in and custom types."""

    def __init__(self) -> None:
        self._builtin = list(BUILTIN_TYPES)
        self._custom: list[ResourceType] = []
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._by_gvk: dict[tuple[str, str, str], ResourceType] = {}
        # Grows on every change, so documents derived from the registry (discovery, OpenAPI) can be cached.
        self.generation = 0
        self._rebuild()

    def _rebuild(self) -> None:
        # A CRD cannot take over a group version the server serves itself; another version of a built-in
        # group (scheduling.k8s.io/v1alpha2 beside v1, as an alpha API would be) is served from the CRD.
        builtin_versions = {(t.group, t.version) for t in self._builtin}
        self._custom = [t for t in self._custom if (t.group, t.version) not in builtin_versions]
        by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        by_gvk: dict[tuple[str, str, str], ResourceType] = {}
        for resource_type in [*self._builtin, *self._custom]:
            by_gvr.setdefault(
                (resource_type.group, resource_type.version, resource_type.plural), resource_type
            )
            by_gvk.setdefault((resource_type.group, resource_type.version, resource_type.kind), resource_type)
        self._by_gvr = by_gvr
        self._by_gvk = by_gvk
        self.generation += 1

    def sync_crds(self, crds: Iterable[dict[str, Any]]) -> None:
        """Replaces every custom type with those of `crds` (the CRDs currently stored)."""
        self._custom = [t for crd in crds for t in crd_types(crd)]
        self._rebuild()

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        return self._by_gvk.get((group, version, kind))

    def by_resource(self, group: str, plural: str) -> ResourceType | None:
        """The preferred version of a group's resource (for RBAC and reviews, which name no version)."""
        return next((t for t in self if t.group == group and t.plural == plural), None)

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self._by_gvr.values())

    def groups(self) -> list[tuple[str, list[str]]]:
        """Every group with its versions, preferred first; the core group ("") comes first."""
        versions: dict[str, list[str]] = {}
        for resource_type in self:
            seen = versions.setdefault(resource_type.group, [])
            if resource_type.version not in seen:
                seen.append(resource_type.version)
        for group_versions in versions.values():
            group_versions.sort(key=version_priority)
        return sorted(versions.items(), key=lambda item: (item[0] != "", item[0] not in _BUILTIN_GROUPS))

    def resources(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self if t.group == group and t.version == version]


_BUILTIN_GROUPS = {t.group for t in BUILTIN_TYPES}
