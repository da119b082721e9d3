"""RayJob rules: upstream's `ValidateRayJobMetadata`, `ValidateRayJobSpec` (with the deletion-strategy
rules) and `ValidateRayJobStatus`.

`job_spec` also checks a RayCronJob's `jobTemplate`, so its paths are relative to the `at` it is given.
Messages carry upstream's prefixes exactly: some rules say ``The RayJob spec is invalid: ...`` and some
do not, as upstream's do.

Deletion rules: upstream collects every failing rule and joins them with newlines into one error; here each
is its own `FieldError` (same text per line), naming its rule.
"""

from __future__ import annotations

from collections.abc import Mapping

import yaml

from kuberay.api import constants as c
from kuberay.api.features import Feature, FeatureGates
from kuberay.api.rayjob import JobDeploymentStatus, JobSubmissionMode
from kuberay.api.validation import names, raycluster, wire
from kuberay.api.validation.field import Errors, FieldError
from kuberay.api.validation.wire import JSON

SPEC_INVALID = "The RayJob spec is invalid: "
_CLUSTER_POLICIES = ("DeleteCluster", "DeleteWorkers")
# TTLs must not decrease along this order: workers go first, then the cluster, then the RayJob itself.
_DELETION_ORDER = ("DeleteWorkers", "DeleteCluster", "DeleteSelf")


def metadata(meta: JSON) -> Errors:
    name = wire.text(meta, "name")
    prefix = "The RayJob metadata is invalid: "
    if len(name.encode()) > c.MAX_RAY_JOB_NAME_LENGTH:
        yield FieldError(
            "metadata.name",
            f"{prefix}RayJob name should be no more than {c.MAX_RAY_JOB_NAME_LENGTH} characters",
        )
    elif problems := names.dns1035_label(name):
        yield FieldError(
            "metadata.name", f"{prefix}RayJob name should be a valid DNS1035 label: {names.go_list(problems)}"
        )


def status(spec: JSON, status_: JSON) -> Errors:
    mode = wire.text(spec, "submissionMode")
    if (
        wire.text(status_, "jobDeploymentStatus") == JobDeploymentStatus.WAITING
        and mode != JobSubmissionMode.INTERACTIVE_MODE
    ):
        yield FieldError(
            "status.jobDeploymentStatus",
            "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode is not "
            "InteractiveMode",
        )


def _legacy_policies(spec: JSON, strategy: JSON, at: str, selector_mode: bool, autoscaling: bool) -> Errors:
    on_success, on_failure = wire.obj(strategy, "onSuccess"), wire.obj(strategy, "onFailure")
    if not (wire.has(strategy, "onSuccess") and wire.has(strategy, "onFailure")):
        yield FieldError(
            f"{at}.{'onFailure' if wire.has(strategy, 'onSuccess') else 'onSuccess'}",
            "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the legacy "
            "deletion policy fields of DeletionStrategy",
        )
        return
    for key, label in (("onSuccess", "OnSuccess"), ("onFailure", "OnFailure")):
        if not wire.has(wire.obj(strategy, key), "policy"):
            yield FieldError(
                f"{at}.{key}.policy",
                f"the DeletionPolicyType field of DeletionStrategy.{label} cannot be unset when DeletionStrategy is "
                "enabled",
            )
            return
    success, failure = wire.text(on_success, "policy"), wire.text(on_failure, "policy")
    if selector_mode:
        for key, policy, when in (("onSuccess", success, "success"), ("onFailure", failure, "failure")):
            if policy in _CLUSTER_POLICIES:
                yield FieldError(
                    f"{at}.{key}.policy",
                    f"the ClusterSelector mode doesn't support DeletionStrategy={policy} on {when}",
                )
    if "DeleteWorkers" in (success, failure) and autoscaling:
        yield FieldError(
            f"{at}.{'onSuccess' if success == 'DeleteWorkers' else 'onFailure'}.policy",
            "DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling enabled",
        )
    if wire.flag(spec, "shutdownAfterJobFinishes") and "DeleteNone" in (success, failure):
        yield FieldError(
            f"{at}.{'onSuccess' if success == 'DeleteNone' else 'onFailure'}.policy",
            # "Finshes" is upstream's spelling.
            f"{SPEC_INVALID}shutdownAfterJobFinshes is set to 'true' while deletion policy is 'DeleteNone'",
        )


def _deletion_rules(rules: list[JSON], at: str, selector_mode: bool, autoscaling: bool) -> Errors:
    # (trigger field, trigger value) -> {policy: ttl}, in first-seen order.
    ttls: dict[tuple[str, str], dict[str, int]] = {}
    for i, rule in enumerate(rules):
        rule_at = f"{at}[{i}]"
        condition = wire.obj(rule, "condition")
        policy = wire.text(rule, "policy")
        by_status, by_deployment = (
            wire.has(condition, "jobStatus"),
            wire.has(condition, "jobDeploymentStatus"),
        )
        if by_status and by_deployment:
            yield FieldError(
                f"{rule_at}.condition",
                f"deletionRules[{i}]: cannot set both JobStatus and JobDeploymentStatus at the same time",
            )
            continue
        if not by_status and not by_deployment:
            yield FieldError(
                f"{rule_at}.condition",
                f"deletionRules[{i}]: exactly one of JobStatus and JobDeploymentStatus must be set",
            )
            continue
        ttl = wire.integer(condition, "ttlSeconds") or 0
        if ttl < 0:
            yield FieldError(
                f"{rule_at}.condition.ttlSeconds", f"deletionRules[{i}]: TTLSeconds must be non-negative"
            )
            continue
        if selector_mode and policy in _CLUSTER_POLICIES:
            yield FieldError(
                f"{rule_at}.policy",
                f"deletionRules[{i}]: DeletionPolicyType '{policy}' not supported when ClusterSelector is set",
            )
            continue
        if autoscaling and policy == "DeleteWorkers":
            yield FieldError(
                f"{rule_at}.policy",
                f"deletionRules[{i}]: DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled",
            )
            continue
        trigger = (
            ("JobStatus", wire.text(condition, "jobStatus"))
            if by_status
            else (
                "JobDeploymentStatus",
                wire.text(condition, "jobDeploymentStatus"),
            )
        )
        policies = ttls.setdefault(trigger, {})
        if policy in policies:
            yield FieldError(
                rule_at,
                f"deletionRules[{i}]: duplicate rule for DeletionPolicyType '{policy}' and {trigger[0]} '{trigger[1]}'",
            )
            continue
        policies[policy] = ttl
    # Upstream checks JobStatus triggers before JobDeploymentStatus ones (each in map order).
    for (field, value), policies in sorted(ttls.items(), key=lambda item: item[0][0] != "JobStatus"):
        previous: tuple[str, int] | None = None
        for policy in _DELETION_ORDER:
            if policy not in policies:
                continue
            if previous is not None and policies[policy] < previous[1]:
                yield FieldError(
                    at,
                    f"for {field} '{value}': {policy} TTL ({policies[policy]}) must be >= {previous[0]} TTL "
                    f"({previous[1]})",
                )
            previous = (policy, policies[policy])


def _deletion_configuration(spec: JSON, at: str, gates: FeatureGates, selector_mode: bool) -> Errors:
    shutdown = wire.flag(spec, "shutdownAfterJobFinishes")
    if not shutdown and (wire.integer(spec, "ttlSecondsAfterFinished") or 0) > 0:
        yield FieldError(
            f"{at}.ttlSecondsAfterFinished",
            f"{SPEC_INVALID}a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished",
        )
    if not wire.has(spec, "deletionStrategy"):
        return
    strategy_at = f"{at}.deletionStrategy"
    if not gates.enabled(Feature.RAY_JOB_DELETION_POLICY):
        yield FieldError(
            strategy_at,
            f"{Feature.RAY_JOB_DELETION_POLICY} feature gate must be enabled to use DeletionStrategy",
        )
        return
    strategy = wire.obj(spec, "deletionStrategy")
    legacy = wire.has(strategy, "onSuccess") or wire.has(strategy, "onFailure")
    rules = wire.objs(strategy, "deletionRules")
    if rules and shutdown:
        yield FieldError(
            f"{strategy_at}.deletionRules",
            f"{SPEC_INVALID}spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are mutually exclusive",
        )
    if rules and legacy:
        yield FieldError(
            f"{strategy_at}.deletionRules",
            f"{SPEC_INVALID}Cannot use both legacy onSuccess/onFailure fields and deletionRules simultaneously",
        )
        return
    autoscaling = wire.flag(wire.obj(spec, "rayClusterSpec"), "enableInTreeAutoscaling")
    if legacy:
        yield from _legacy_policies(spec, strategy, strategy_at, selector_mode, autoscaling)
    elif rules:
        yield from _deletion_rules(rules, f"{strategy_at}.deletionRules", selector_mode, autoscaling)
    else:
        yield FieldError(
            strategy_at,
            f"{SPEC_INVALID}DeletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules "
            "field (cannot be empty)",
        )


def _runtime_env(text: str) -> str | None:
    """Why `runtimeEnvYAML` does not decode into a mapping, or None. Upstream converts the YAML to JSON and
    decodes that into a Go map; a document of another type fails with Go's JSON text, reproduced here. A
    YAML syntax error is reported with PyYAML's wording of the problem, which differs from Go's yaml.v2."""
    try:
        document = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        line = f"line {error.problem_mark.line + 1}: " if error.problem_mark is not None else ""
        return f"error converting YAML to JSON: yaml: {line}{error.problem or error.context}"
    except yaml.YAMLError as error:
        return f"error converting YAML to JSON: yaml: {error}"
    if document is None or isinstance(document, dict):
        return None
    if isinstance(document, list):
        go_kind = "array"
    elif isinstance(document, bool):
        go_kind = "bool"
    elif isinstance(document, int | float):
        go_kind = "number"
    else:
        go_kind = "string"
    return (
        "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
        f"{go_kind} into Go value of type types.RuntimeEnvType"
    )


def job_spec(spec: JSON, annotations: Mapping[str, str], gates: FeatureGates, at: str) -> Errors:
    """Upstream's `ValidateRayJobSpec`; `annotations` are the RayJob's (empty for a RayCronJob's template)."""
    suspend, shutdown = wire.flag(spec, "suspend"), wire.flag(spec, "shutdownAfterJobFinishes")
    if suspend and not shutdown:
        yield FieldError(
            f"{at}.suspend",
            f"{SPEC_INVALID}a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended",
        )
    ttl = wire.integer(spec, "ttlSecondsAfterFinished")
    if ttl is not None and ttl < 0:
        yield FieldError(
            f"{at}.ttlSecondsAfterFinished",
            f"{SPEC_INVALID}TTLSecondsAfterFinished must be a non-negative integer",
        )
    selector = wire.strings(spec, "clusterSelector")
    selector_mode = bool(selector)
    yield from _deletion_configuration(spec, at, gates, selector_mode)

    if suspend and selector_mode:
        yield FieldError(
            f"{at}.suspend", f"{SPEC_INVALID}the ClusterSelector mode doesn't support the suspend operation"
        )
    has_cluster_spec = wire.has(spec, "rayClusterSpec")
    if not has_cluster_spec and not selector_mode:
        yield FieldError(
            f"{at}.rayClusterSpec", f"{SPEC_INVALID}one of RayClusterSpec or ClusterSelector must be set"
        )
    mode = wire.text(spec, "submissionMode")
    backoff_limit = wire.integer(spec, "backoffLimit")
    if selector_mode:
        if not selector.get(c.RAY_JOB_CLUSTER_SELECTOR_KEY):
            yield FieldError(
                f"{at}.clusterSelector[{c.RAY_JOB_CLUSTER_SELECTOR_KEY}]",
                "cluster name in ClusterSelector should not be empty",
            )
        if mode == JobSubmissionMode.SIDECAR_MODE:
            yield FieldError(f"{at}.clusterSelector", "ClusterSelector is not supported in SidecarMode")
        if backoff_limit is not None and backoff_limit > 0:
            yield FieldError(
                f"{at}.backoffLimit", f"{SPEC_INVALID}BackoffLimit is incompatible with ClusterSelector mode"
            )
    if mode == JobSubmissionMode.INTERACTIVE_MODE and backoff_limit is not None and backoff_limit > 0:
        yield FieldError(
            f"{at}.backoffLimit", f"{SPEC_INVALID}BackoffLimit is incompatible with InteractiveMode"
        )
    cluster_spec = wire.obj(spec, "rayClusterSpec")
    cluster_at = f"{at}.rayClusterSpec"
    if mode == JobSubmissionMode.SIDECAR_MODE:
        if wire.has(spec, "submitterPodTemplate"):
            yield FieldError(
                f"{at}.submitterPodTemplate", "Currently, SidecarMode doesn't support SubmitterPodTemplate"
            )
        if wire.has(spec, "submitterConfig"):
            yield FieldError(
                f"{at}.submitterConfig", "Currently, SidecarMode doesn't support SubmitterConfig"
            )
        head_template = wire.obj(wire.obj(cluster_spec, "headGroupSpec"), "template")
        if wire.text(wire.obj(head_template, "spec"), "restartPolicy") not in ("", "Never"):
            yield FieldError(
                f"{cluster_at}.headGroupSpec.template.spec.restartPolicy",
                "restartPolicy for head Pod should be Never or unset when using SidecarMode",
            )
    if has_cluster_spec:
        if wire.flag(wire.obj(cluster_spec, "authOptions"), "enableK8sTokenAuth"):
            yield FieldError(
                f"{cluster_at}.authOptions.enableK8sTokenAuth",
                f"{SPEC_INVALID}K8s token auth mode is currently not supported for RayJob",
            )
        for error in raycluster.cluster_spec(cluster_spec, annotations, gates, cluster_at):
            yield error.prefixed(SPEC_INVALID)
    runtime_env = wire.text(spec, "runtimeEnvYAML")
    if (problem := _runtime_env(runtime_env)) is not None:
        yield FieldError(
            f"{at}.runtimeEnvYAML", f"failed to unmarshal RuntimeEnvYAML: {runtime_env}: {problem}"
        )
    for key in ("activeDeadlineSeconds", "preRunningDeadlineSeconds"):
        value = wire.integer(spec, key)
        if value is not None and value <= 0:
            yield FieldError(f"{at}.{key}", f"{SPEC_INVALID}{key} must be a positive integer")
    if backoff_limit is not None and backoff_limit < 0:
        yield FieldError(f"{at}.backoffLimit", f"{SPEC_INVALID}backoffLimit must be a positive integer")
