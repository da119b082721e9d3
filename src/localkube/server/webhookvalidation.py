"""Validation of Validating- and MutatingWebhookConfigurations (admissionregistration.k8s.io/v1) that the
real API server does before storing one, with apimachinery's paths and messages: each webhook's name
(required, unique in its configuration), `clientConfig` (exactly one of `url`, which must be https, and
`service`, whose path starts with `/`), `sideEffects` (required: None or NoneOnDryRun),
`admissionReviewVersions` (required, including v1), the enumerations `failurePolicy`, `matchPolicy`,
`reinvocationPolicy`, rule `operations` and `scope`, `timeoutSeconds` between 1 and 30, and
`matchConditions` (named, unique, each expression a CEL expression that compiles). Defaults are
filled before this runs (`builtin.normalize_on_write`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kubesemantics import cellib
from kubesemantics.schema import supported_values
from localkube.admission.errors import DUPLICATE, INVALID, REQUIRED, UNSUPPORTED, FieldError

WEBHOOK_CONFIGURATION_KINDS = frozenset({"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"})
_ENUMS = {
    "failurePolicy": ("Fail", "Ignore"),
    "matchPolicy": ("Equivalent", "Exact"),
    "sideEffects": ("None", "NoneOnDryRun"),
}
_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")


def validate_webhook_configuration(kind: str, obj: dict[str, Any]) -> list[FieldError]:
    """The causes for refusing a webhook configuration; empty for other kinds and valid ones."""
    if kind not in WEBHOOK_CONFIGURATION_KINDS:
        return []
    causes: list[FieldError] = []
    seen: set[str] = set()
    for i, webhook in enumerate(obj.get("webhooks") or []):
        path = f"webhooks[{i}]"
        if not isinstance(webhook, dict):
            continue
        name = webhook.get("name") or ""
        if not name:
            causes.append(FieldError(f"{path}.name", REQUIRED))
        elif name in seen:
            causes.append(FieldError(f"{path}.name", DUPLICATE, name))
        elif name.count(".") < 2:
            causes.append(
                FieldError(
                    f"{path}.name",
                    INVALID,
                    name,
                    "should be a domain with at least three segments separated by dots",
                )  # fmt: skip
            )
        seen.add(name)
        causes += _client_config(f"{path}.clientConfig", webhook.get("clientConfig") or {})
        if "sideEffects" not in webhook:
            causes.append(
                FieldError(f"{path}.sideEffects", REQUIRED, detail="must specify one of None, NoneOnDryRun")
            )
        versions = webhook.get("admissionReviewVersions") or []
        if not versions:
            causes.append(
                FieldError(
                    f"{path}.admissionReviewVersions", REQUIRED, detail="must specify one of v1, v1beta1"
                )
            )
        elif not {"v1", "v1beta1"} & set(versions):
            causes.append(
                FieldError(
                    f"{path}.admissionReviewVersions",
                    INVALID,
                    versions,
                    "must include at least one of v1, v1beta1",
                )  # fmt: skip
            )
        enums = dict(_ENUMS)
        if kind == "MutatingWebhookConfiguration":
            enums["reinvocationPolicy"] = ("Never", "IfNeeded")
        for field, allowed in enums.items():
            if field in webhook and webhook[field] not in allowed:
                causes.append(
                    FieldError(f"{path}.{field}", UNSUPPORTED, webhook[field], supported_values(allowed))
                )
        timeout = webhook.get("timeoutSeconds")
        if isinstance(timeout, int) and not 1 <= timeout <= 30:
            causes.append(
                FieldError(
                    f"{path}.timeoutSeconds",
                    INVALID,
                    timeout,
                    "the timeout value must be between 1 and 30 seconds",
                )  # fmt: skip
            )
        causes += _match_conditions(f"{path}.matchConditions", webhook.get("matchConditions") or [])
        for j, rule in enumerate(webhook.get("rules") or []):
            causes += _rule(f"{path}.rules[{j}]", rule if isinstance(rule, dict) else {})
    return causes


def _client_config(path: str, config: dict[str, Any]) -> list[FieldError]:
    url, service = config.get("url"), config.get("service")
    if bool(url) == bool(service):
        return [FieldError(path, REQUIRED, detail="exactly one of url or service is required")]
    if url:
        if urlsplit(str(url)).scheme != "https":
            return [FieldError(f"{path}.url", INVALID, url, "'https' is the only allowed URL scheme")]
        return []
    service_path = (service or {}).get("path")
    if service_path and not str(service_path).startswith("/"):
        return [FieldError(f"{path}.service.path", INVALID, service_path, "must start with a '/'")]
    return []


def _match_conditions(path: str, conditions: list[Any]) -> list[FieldError]:
    causes = []
    names: set[str] = set()
    for k, condition in enumerate(conditions):
        condition = condition if isinstance(condition, dict) else {}
        name, expression = condition.get("name") or "", condition.get("expression") or ""
        if not name:
            causes.append(FieldError(f"{path}[{k}].name", REQUIRED))
        elif name in names:
            causes.append(FieldError(f"{path}[{k}].name", DUPLICATE, name))
        names.add(name)
        if not expression:
            causes.append(FieldError(f"{path}[{k}].expression", REQUIRED))
            continue
        try:
            cellib.compile_rule(str(expression))
        except ValueError as error:
            causes.append(
                FieldError(f"{path}[{k}].expression", INVALID, expression, f"compilation failed: {error}")
            )
    return causes


def _rule(path: str, rule: dict[str, Any]) -> list[FieldError]:
    causes = []
    for k, operation in enumerate(rule.get("operations") or []):
        if operation not in _OPERATIONS:
            causes.append(
                FieldError(f"{path}.operations[{k}]", UNSUPPORTED, operation, supported_values(_OPERATIONS))
            )
    scope = rule.get("scope", "*")
    if scope not in _SCOPES:
        causes.append(FieldError(f"{path}.scope", UNSUPPORTED, scope, supported_values(_SCOPES)))
    return causes
