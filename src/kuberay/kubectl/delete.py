"""`kubectl ray delete`: bare names are RayClusters, `raycluster/`, `rayjob/`, `rayservice/` prefixes (any
case) name the kind; without `-y` the user confirms; the first failure stops the rest."""

from __future__ import annotations

from collections.abc import Callable

from kuberay.kubectl.kube import Kube, PluginError, TargetError, describe
from kuberay.rayresources import RAYCLUSTER, RAYJOB, RAYSERVICE
from kuberay.runtime import errors
from kuberay.runtime.resources import Resource

KINDS: dict[str, Resource] = {"raycluster": RAYCLUSTER, "rayjob": RAYJOB, "rayservice": RAYSERVICE}


def parse_targets(args: list[str]) -> list[tuple[str, str]]:
    """(kind, name) pairs, grouped by kind in the order raycluster, rayjob, rayservice."""
    targets: dict[str, list[str]] = {}
    for arg in args:
        parts = arg.split("/")
        if len(parts) == 1:
            kind, name = "raycluster", parts[0]
        elif len(parts) != 2 or not parts[1]:
            raise TargetError(f"invalid resource type/name: {arg}")
        elif parts[0].lower() not in KINDS:
            raise TargetError(f"unsupported resource type: {arg}")
        else:
            kind, name = parts[0].lower(), parts[1]
        targets.setdefault(kind, []).append(name)
    return [(kind, name) for kind in KINDS for name in targets.get(kind, [])]


def confirm(targets: list[tuple[str, str]], ask: Callable[[str], str]) -> bool:
    listing = "".join(f"\n- {kind}/{name}" for kind, name in targets)
    answer = ask(f"Are you sure you want to delete the following resources?{listing}\n(y/yes/n/no)")
    choice = answer.strip().lower()
    if choice in ("y", "yes"):
        return True
    if choice in ("n", "no"):
        print("Canceled deletion.")
    else:
        print(f"Unknown input {answer}")
    return False


async def delete(kube: Kube, targets: list[tuple[str, str]]) -> None:
    for kind, name in targets:
        try:
            await kube.client.delete(KINDS[kind], name, kube.namespace)
        except errors.KubeError as e:
            raise PluginError(f"failed to delete {kind}/{name}: {describe(e, KINDS[kind])}") from e
        print(f"Deleted {kind} {name}", flush=True)
