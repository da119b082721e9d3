"""`pods/binding`, as kube-apiserver's BindingREST serves it, admitted as any create is.

A Binding (`target.name`, the node) is admitted first: the mutating webhooks whose rules name `pods/binding`
see it (kind `Binding`, resource `pods`, subresource `binding`, operation CREATE); then, as BindingREST.Create,
its name must be the URL's (400 `name in URL does not match name in Binding object`) and its target named,
and the validating webhooks see what the mutating ones left. Only then is the pod assigned, as
`setPodHostAndAnnotations` does: the Binding's `metadata.uid` (kube-scheduler sends the pod's) and
`resourceVersion` are preconditions; a pod being deleted or already bound is refused (409); else
`spec.nodeName` set, the Binding's annotations merged into the pod's (theirs win), and the
`PodScheduled=True` condition set, in one write. The merge is what makes a mutating webhook
on `pods/binding` able to hand a pod what it learns of the node it lands on (Node Label Delivery does).

localkube's scheduler binds through `Binder` too, as kube-scheduler POSTs each binding, so a webhook sees
the scheduler's bindings and a client's alike.
"""

from __future__ import annotations

from typing import Any

from localkube.server import errors, webhooks
from localkube.server.rbac import UserInfo
from localkube.server.registry import ResourceType
from localkube.server.rest import Resources, now

SUBRESOURCE = "binding"


def target_node(name: str, binding: dict[str, Any]) -> str:
    """The node a Binding names (ValidatePodBinding's one required field)."""
    node = (binding.get("target") or {}).get("name")
    if not node:
        raise errors.ApiError(422, "Invalid", f'Binding "{name}" is invalid: target.name: Required value')
    return str(node)


def assign(
    resources: Resources,
    resource_type: ResourceType,
    namespace: str | None,
    name: str,
    binding: dict[str, Any],
) -> None:
    """Assigns the pod to the Binding's node with the Binding's annotations (setPodHostAndAnnotations)."""
    node = target_node(name, binding)
    key = resource_type.key(namespace, name)
    pod = resources.store.get(key)  # the stored form, written back as such
    if pod is None:
        raise errors.not_found(resource_type.plural, resource_type.group, name)
    wanted = binding.get("metadata") or {}
    for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
        if wanted.get(field) and wanted[field] != pod["metadata"].get(field):
            # etcd3's storage error, as kube-apiserver words it (its key, not localkube's).
            raise errors.conflict(
                "pods", "", name,
                f"StorageError: invalid object, Code: 4, Key: /registry/pods/{namespace}/{name}, ResourceVersion: 0, "
                f"AdditionalErrorMsg: Precondition failed: {label} in precondition: {wanted[field]}, {label} in "
                f"object meta: {pod['metadata'].get(field)}",
            )  # fmt: skip
    if pod["metadata"].get("deletionTimestamp"):
        raise errors.conflict("pods/binding", "", name, f"pod {name} is being deleted, cannot be assigned to a host")  # fmt: skip
    bound = (pod.get("spec") or {}).get("nodeName")
    if bound:
        raise errors.conflict("pods/binding", "", name, f'pod {name} is already assigned to node "{bound}"')
    pod.setdefault("spec", {})["nodeName"] = node
    annotations = (binding.get("metadata") or {}).get("annotations") or {}
    if annotations:
        pod["metadata"]["annotations"] = {**(pod["metadata"].get("annotations") or {}), **annotations}
    conditions = [
        c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"
    ]
    conditions.append(
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now()}
    )
    pod.setdefault("status", {})["conditions"] = conditions
    resources.store.update(key, pod, int(pod["metadata"]["resourceVersion"]))


class Binder:
    """Creates Bindings through admission (see the module's docstring)."""

    def __init__(self, resources: Resources, hooks: webhooks.Webhooks) -> None:
        self.resources = resources
        self.webhooks = hooks
        self.pods = resources.registry.by_resource("", "pods")

    def admitted(self) -> bool:
        """Whether some webhook sees bindings (else a binding needs no await)."""
        return self.pods is not None and self.webhooks.applies_to(self.pods, SUBRESOURCE)

    async def create(
        self,
        resource_type: ResourceType,
        namespace: str | None,
        name: str,
        binding: dict[str, Any],
        user: UserInfo,
        dry_run: bool = False,
    ) -> None:
        """Admits `binding` of pod `name`, then assigns the pod (not on a dry run)."""
        attributes = None
        if self.webhooks.applies_to(resource_type, SUBRESOURCE):
            metadata = {**(binding.get("metadata") or {}), "namespace": namespace}
            obj = {**binding, "apiVersion": "v1", "kind": "Binding", "metadata": metadata}
            attributes = webhooks.Attributes(
                "CREATE", resource_type, SUBRESOURCE, namespace, name, obj, None, user, dry_run
            )
            binding = await self.webhooks.mutate(attributes) or obj
        if (binding.get("metadata") or {}).get("name") != name:
            raise errors.bad_request("name in URL does not match name in Binding object")
        target_node(name, binding)
        if attributes is not None:
            attributes.obj = binding
            await self.webhooks.validate(attributes)
        if not dry_run:
            assign(self.resources, resource_type, namespace, name, binding)
