"""`kubectl ray version`: the plugin's version, then the KubeRay operator's, read from the image tag of the
first Deployment labelled `app.kubernetes.io/name in (kuberay-operator,kuberay)` in any namespace; when
there is none (an operator run outside the cluster, as `kuberay local up` does), a warning line and exit 0."""

from __future__ import annotations

from importlib import metadata

from kuberay.kubectl.kube import DEPLOYMENT, Kube, describe
from kuberay.runtime import errors

OPERATOR_SELECTOR = "app.kubernetes.io/name in (kuberay-operator,kuberay)"


def plugin_version() -> str:
    try:
        return metadata.version("kuberay")
    except metadata.PackageNotFoundError:
        return "development"


def image_tag(image: str) -> str:
    """The tag of an image reference (`latest` when none); with both a tag and a digest, both."""
    if "@sha256:" in image and image.count(":") == 2:
        return image.split(":", 1)[1]
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else "latest"


async def operator_version(kube: Kube) -> str:
    """The operator's version; raises `LookupError` with upstream's reason when it cannot be found."""
    try:
        found = await kube.client.list(DEPLOYMENT, None, label_selector=OPERATOR_SELECTOR)
    except errors.KubeError as e:
        raise LookupError(f"failed to get KubeRay operator deployment: {describe(e)}") from e
    if not found.items:
        raise LookupError("no KubeRay operator deployments found in any namespace")
    containers = found.items[0]["spec"]["template"]["spec"].get("containers") or []
    if not containers:
        raise LookupError("no containers found in KubeRay operator deployment")
    return image_tag(containers[0].get("image", ""))


async def version(kube: Kube) -> str:
    lines = [f"kubectl ray plugin version: {plugin_version()}"]
    try:
        lines.append(f"KubeRay operator version: {await operator_version(kube)}")
    except LookupError as e:
        lines.append(
            f"warning: KubeRay operator installation cannot be found: {e}. "
            'Did you install it with the name "kuberay-operator"?'
        )
    return "\n".join(lines) + "\n"
