"""The validating admission webhook upstream's operator serves when ENABLE_WEBHOOKS is `true`:
`vraycluster.kb.io` at `/validate-ray-io-v1-raycluster` (CREATE and UPDATE of ray.io/v1 rayclusters,
failurePolicy Fail, sideEffects None), on controller-runtime's webhook server: HTTPS on port 9443 with
`tls.crt` and `tls.key` from `/tmp/k8s-webhook-server/serving-certs` (both settable by flag here).

It runs upstream's webhook checks through the project's own validation
(`validate_raycluster_admission`: metadata rules and unique worker-group names) and refuses as
controller-runtime does with upstream's `apierrors.NewInvalid`: the AdmissionReview response carries the
Invalid status (code 422), so a client reads `admission webhook "vraycluster.kb.io" denied the request:
RayCluster.ray.io "<name>" is invalid: metadata.name: Invalid value: "<name>": <message>`. A bad value that
is not a string (a worker group) is shown as JSON, where Go prints its struct. Deletes are allowed.
"""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kuberay.api.settings import WebhookSettings
from kuberay.api.validation import FieldError, validate_raycluster_admission
from kuberay.runtime.serving import EndpointServer, HttpRequest
from kubesemantics.schema import render_value

log = logging.getLogger("raycluster-resource")

RAYCLUSTER_PATH = "/validate-ray-io-v1-raycluster"
RAYCLUSTER_WEBHOOK = "vraycluster.kb.io"
_JSON = "application/json"


async def start(settings: WebhookSettings) -> EndpointServer:
    """The webhook server, listening on every interface at `settings.port`."""
    cert_dir = Path(settings.cert_dir)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert_dir / "tls.crt", cert_dir / "tls.key")
    except (OSError, ssl.SSLError) as e:
        raise OSError(f"webhook server: cannot load tls.crt and tls.key from {cert_dir}: {e}") from None
    server = EndpointServer({RAYCLUSTER_PATH: review_raycluster}, methods=("POST",))
    await server.start("0.0.0.0", settings.port, tls=context)
    log.info("webhook server listening on port %d, path %s", server.port, RAYCLUSTER_PATH)
    return server


def review_raycluster(request: HttpRequest) -> tuple[int, str, bytes]:
    """Answers one AdmissionReview for a RayCluster."""
    try:
        review = json.loads(request.body)
        admission = review["request"]
        uid = str(admission["uid"])
    except (ValueError, KeyError, TypeError) as e:
        return 400, "text/plain", f"the request is not an AdmissionReview: {e}\n".encode()
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    obj = admission.get("object")
    if admission.get("operation") in ("CREATE", "UPDATE") and isinstance(obj, Mapping):
        name = str((obj.get("metadata") or {}).get("name") or "")
        log.info("validate %s %s", str(admission["operation"]).lower(), name)
        errors = validate_raycluster_admission(obj)
        if errors:
            response = {
                "uid": uid,
                "allowed": False,
                "status": invalid_status("RayCluster", name, obj, errors),
            }
    body = {
        "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": response,
    }
    return 200, _JSON, json.dumps(body).encode()


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
