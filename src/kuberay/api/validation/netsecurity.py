"""The network-security rules on a RayCluster spec: its `networkPolicy` (modes and the rules they allow) and
its TLS options (the TLS variables and mounts the operator manages), as `ValidateRayClusterSpec` checks them
behind their feature gates.
"""

from __future__ import annotations

from kuberay.api import constants as c
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.validation import names, wire
from kuberay.api.validation.field import Errors, FieldError
from kuberay.api.validation.wire import JSON

_TLS_ENV_VARS = (c.RAY_USE_TLS, c.RAY_TLS_SERVER_CERT, c.RAY_TLS_SERVER_KEY, c.RAY_TLS_CA_CERT)


def _rules_against_mode(rules: JSON, mode: str, owner: str, at: str) -> Errors:
    if mode == "DenyAllEgress" and rules.get("ingressRules"):
        yield FieldError(
            f"{at}.ingressRules",
            f'{owner}.ingressRules cannot be set when mode is "{mode}" (ingress is not restricted)',
        )
    if mode == "DenyAllIngress" and rules.get("egressRules"):
        yield FieldError(
            f"{at}.egressRules",
            f'{owner}.egressRules cannot be set when mode is "{mode}" (egress is not restricted)',
        )


def network_policy(spec: JSON, at: str, gates: FeatureGates) -> Errors:
    policy_at = f"{at}.networkPolicy"
    if not gates.enabled(Feature.RAY_CLUSTER_NETWORK_POLICY):
        yield FieldError(
            policy_at,
            f"spec.networkPolicy requires the {Feature.RAY_CLUSTER_NETWORK_POLICY} feature gate to be enabled",
        )
        return
    policy = wire.obj(spec, "networkPolicy")
    mode = wire.text(policy, "mode") or "DenyAll"
    for part in ("head", "worker"):
        yield from _rules_against_mode(
            wire.obj(policy, part), mode, f"networkPolicy.{part}", f"{policy_at}.{part}"
        )
    group_names = set()
    for i, group in enumerate(wire.objs(spec, "workerGroupSpecs")):
        name = wire.text(group, "groupName")
        group_names.add(name)
        if problems := names.dns1123_label(name):
            yield FieldError(
                f"{at}.workerGroupSpecs[{i}].groupName",
                f'worker group name "{name}" must be a valid DNS1123 label when networkPolicy is enabled (it is '
                f"embedded in the NetworkPolicy name): {names.go_list(problems)}",
            )
    for i, rules in enumerate(wire.objs(policy, "workerGroups")):
        name = wire.text(rules, "groupName")
        owner = f'networkPolicy.workerGroups["{name}"]'
        yield from _rules_against_mode(rules, mode, owner, f"{policy_at}.workerGroups[{i}]")
        if name not in group_names:
            yield FieldError(
                f"{policy_at}.workerGroups[{i}].groupName",
                f"{owner} does not match any group name in workerGroupSpecs",
            )


def _tls_env(container: JSON, where: str, at: str, managed: str = "TLS configuration") -> Errors:
    for name in _TLS_ENV_VARS:
        if (i := wire.env_index(container, name)) is not None:
            yield FieldError(
                f"{at}.env[{i}]",
                f"cannot set {name} environment variable in {where} when tlsOptions is set - the operator manages "
                f"{managed} automatically",
            )


def _tls_container(container: JSON, where: str, at: str) -> Errors:
    yield from _tls_env(container, where, at)
    yield from _tls_mounts(wire.objs(container, "volumeMounts"), where, f"{at}.volumeMounts")


def _tls_mounts(mounts: list[JSON], where: str, at: str) -> Errors:
    for i, mount in enumerate(mounts):
        if wire.text(mount, "name") == c.RAY_TLS_VOLUME_NAME:
            yield FieldError(
                f"{at}[{i}]",
                f'cannot use volume mount named "{c.RAY_TLS_VOLUME_NAME}" in {where} when tlsOptions is set - the '
                "operator manages TLS configuration automatically",
            )
        elif wire.text(mount, "mountPath") == c.RAY_TLS_CERT_MOUNT_PATH:
            yield FieldError(
                f"{at}[{i}]",
                f'cannot use volume mount at path "{c.RAY_TLS_CERT_MOUNT_PATH}" in {where} when tlsOptions is set - '
                "the operator manages TLS configuration automatically",
            )


def tls(spec: JSON, at: str, gates: FeatureGates) -> Errors:
    if not gates.enabled(Feature.RAY_CLUSTER_MTLS):
        yield FieldError(
            f"{at}.tlsOptions",
            f"spec.tlsOptions requires the {Feature.RAY_CLUSTER_MTLS} feature gate to be enabled",
        )
        return
    if not wire.flag(wire.obj(spec, "tlsOptions"), "enabled"):
        return
    for group_at, name, group in wire.pod_groups(spec, at):
        where = "head Pod" if name is None else f'worker group "{name}"'
        if containers := wire.template_containers(group):
            yield from _tls_container(containers[0], where, f"{group_at}.template.spec.containers[0]")
    autoscaler = wire.obj(spec, "autoscalerOptions")
    yield from _tls_env(
        autoscaler,
        "autoscalerOptions.env",
        f"{at}.autoscalerOptions",
        "TLS configuration for the autoscaler",
    )
    yield from _tls_mounts(
        wire.objs(autoscaler, "volumeMounts"),
        "autoscalerOptions.volumeMounts",
        f"{at}.autoscalerOptions.volumeMounts",
    )
