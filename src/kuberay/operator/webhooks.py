"""The validating admission webhooks upstream's operator serves when ENABLE_WEBHOOKS is `true` (v1.7 added
the RayJob and RayService ones beside the RayCluster one): `vraycluster.kb.io`, `vrayjob.kb.io` and
`vrayservice.kb.io` at `/validate-ray-io-v1-<kind>` (CREATE and UPDATE of ray.io/v1 rayclusters, rayjobs and
rayservices, failurePolicy Fail, sideEffects None), on controller-runtime's webhook server: HTTPS on port
9443 with `tls.crt` and `tls.key` from `/tmp/k8s-webhook-server/serving-certs` (both settable by flag here).

The same server serves Node Label Delivery's mutating webhooks (nodelabels.py), which share the
AdmissionReview handling here.

Each runs upstream's webhook checks through the project's own validation (`validate_<kind>_admission`,
built from the rules the reconcilers apply: metadata rules, and for RayClusters unique worker-group names)
and refuses as controller-runtime does with upstream's `apierrors.NewInvalid`: the AdmissionReview
response carries the Invalid status (code 422), so a client reads `admission webhook "vrayjob.kb.io"
denied the request: RayJob.ray.io "<name>" is invalid: metadata.name: Invalid value: "<name>": <message>`.
A bad value that is not a string (a worker group) is shown as JSON, where Go prints its struct. Deletes
are allowed.
"""

from __future__ import annotations

import functools
import json
import logging
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kuberay.api.settings import WebhookSettings
from kuberay.api.validation import (
    FieldError,
    validate_raycluster_admission,
    validate_rayjob_admission,
    validate_rayservice_admission,
)
from kuberay.runtime.serving import EndpointServer, HttpRequest, Reply, Route
from kubesemantics.schema import render_value

_JSON = "application/json"


@dataclass(frozen=True)
class Webhook:
    """One of upstream's validating webhooks: the kind it validates, its registered name and path."""

    kind: str
    name: str
    path: str
    validate: Callable[[Mapping[str, Any], Sequence[str]], list[FieldError]]

    @property
    def log(self) -> logging.Logger:
        # controller-runtime's logger names upstream gives each webhook (`raycluster-resource`, ...).
        return logging.getLogger(f"{self.kind.lower()}-resource")

    def review(self, request: HttpRequest, allowed_node_labels: Sequence[str] = ()) -> tuple[int, str, bytes]:
        return review(self, request, allowed_node_labels)


RAYCLUSTER = Webhook(
    "RayCluster", "vraycluster.kb.io", "/validate-ray-io-v1-raycluster", validate_raycluster_admission
)
RAYJOB = Webhook("RayJob", "vrayjob.kb.io", "/validate-ray-io-v1-rayjob", validate_rayjob_admission)
RAYSERVICE = Webhook(
    "RayService", "vrayservice.kb.io", "/validate-ray-io-v1-rayservice", validate_rayservice_admission
)
WEBHOOKS = (RAYCLUSTER, RAYJOB, RAYSERVICE)


async def start(
    settings: WebhookSettings,
    mutating: Mapping[str, Route] | None = None,
    allowed_node_labels: Sequence[str] = (),
) -> EndpointServer:
    """The webhook server, listening on every interface at `settings.port`, serving all three validating
    webhooks (with the operator's `allowedNodeLabels`) and the `mutating` ones (Node Label Delivery's, by
    path)."""
    cert_dir = Path(settings.cert_dir)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert_dir / "tls.crt", cert_dir / "tls.key")
    except (OSError, ssl.SSLError) as e:
        raise OSError(f"webhook server: cannot load tls.crt and tls.key from {cert_dir}: {e}") from None
    routes: dict[str, Route] = {
        webhook.path: functools.partial(webhook.review, allowed_node_labels=tuple(allowed_node_labels))
        for webhook in WEBHOOKS
    }
    routes.update(mutating or {})
    server = EndpointServer(routes, methods=("POST",))
    await server.start("0.0.0.0", settings.port, tls=context)
    logging.getLogger("webhook").info(
        "webhook server listening on port %d, paths %s", server.port, ", ".join(routes)
    )
    return server


def review(webhook: Webhook, request: HttpRequest, allowed_node_labels: Sequence[str] = ()) -> tuple[int, str, bytes]:  # fmt: skip
    """Answers one AdmissionReview for an object of `webhook.kind` (labelMappings checked against the
    operator's `allowedNodeLabels`)."""
    parsed = parse_review(request)
    if not isinstance(parsed, AdmissionReview):
        return parsed
    uid, admission = parsed.uid, parsed.request
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    obj = admission.get("object")
    if admission.get("operation") in ("CREATE", "UPDATE") and isinstance(obj, Mapping):
        name = str((obj.get("metadata") or {}).get("name") or "")
        webhook.log.info("validate %s %s", str(admission["operation"]).lower(), name)
        errors = webhook.validate(obj, allowed_node_labels)
        if errors:
            response = {
                "uid": uid,
                "allowed": False,
                "status": invalid_status(webhook.kind, name, obj, errors),
            }
    return parsed.answer(response)


@dataclass(frozen=True)
class AdmissionReview:
    """An AdmissionReview as received: its apiVersion (answered in kind), its request and the request's uid."""

    api_version: str
    request: Mapping[str, Any]
    uid: str

    def answer(self, response: Mapping[str, Any]) -> Reply:
        body = {"apiVersion": self.api_version, "kind": "AdmissionReview", "response": response}
        return 200, _JSON, json.dumps(body).encode()


def parse_review(request: HttpRequest) -> AdmissionReview | Reply:
    """The AdmissionReview a webhook request carries, or the 400 that answers a body that is none."""
    try:
        incoming = json.loads(request.body)
        admission = incoming["request"]
        return AdmissionReview(
            incoming.get("apiVersion", "admission.k8s.io/v1"), admission, str(admission["uid"])
        )
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        return 400, "text/plain", f"the request is not an AdmissionReview: {e}\n".encode()


def invalid_status(kind: str, name: str, obj: Mapping[str, Any], errors: list[FieldError]) -> dict[str, Any]:
    """apimachinery's `NewInvalid(GroupKind{ray.io, kind}, name, errors)` as a Status."""
    causes = [
        {"reason": "FieldValueInvalid", "message": _invalid_value(obj, e), "field": e.path} for e in errors
    ]
    texts = [f"{cause['field']}: {cause['message']}" for cause in causes]
    aggregate = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{kind}.ray.io "{name}" is invalid: {aggregate}',
        "reason": "Invalid",
        "details": {"name": name, "group": "ray.io", "kind": kind, "causes": causes},
        "code": 422,
    }


def _invalid_value(obj: Mapping[str, Any], error: FieldError) -> str:
    return f"Invalid value: {render_value(_at(obj, error.path))}: {error.message}"


def _at(obj: Any, path: str) -> Any:
    """The value at a field path such as `spec.workerGroupSpecs[1]` (None where there is none)."""
    for part in path.replace("[", ".[").split("."):
        if part.startswith("[") and part.endswith("]") and isinstance(obj, list):
            index = int(part[1:-1])
            obj = obj[index] if 0 <= index < len(obj) else None
        elif isinstance(obj, Mapping):
            obj = obj.get(part)
        else:
            return None
    return obj
