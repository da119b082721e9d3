"""Dynamic admission: calling the webhooks of MutatingWebhookConfigurations and
ValidatingWebhookConfigurations (admissionregistration.k8s.io/v1) as kube-apiserver does.

A write (create, update, patch, delete) of a resource is matched against every webhook's `rules`
(operations, apiGroups, apiVersions, resources with `/subresource` forms, scope), `matchPolicy` (Equivalent
also matches the other served versions of the same group and resource), `namespaceSelector` (on the
namespace's labels; a Namespace is matched by its own labels, other cluster-scoped objects always match)
and `objectSelector` (on the labels of the new or the old object), then `matchConditions` (CEL over `object`,
`oldObject` and `request`; all must be true; one that fails to evaluate is a call failure, under the
failure policy; `authorizer` is not offered). Each matching webhook is sent an
AdmissionReview v1 over HTTPS, to its `url` or to its `service` (resolved through the Service's Endpoints,
as the service proxy does, while the certificate is checked for `<service>.<namespace>.svc`), trusting
`caBundle` (else the system's roots), within `timeoutSeconds`. Mutating webhooks run first, one after
another in name order, each seeing the previous one's JSONPatch applied; validating webhooks then see the
final object; the warnings of the webhooks that allowed the request reach the client as `Warning` headers.
A refusal reads `admission webhook "NAME" denied the request: MSG` with the webhook's status
code; a webhook that cannot be called fails the request as `Internal error occurred: failed calling webhook
"NAME": ...` under `failurePolicy: Fail` and is skipped under `Ignore`. A dry run is sent with `dryRun: true`
(v1 webhooks declare no side effects; `webhookvalidation` refuses others).

Writes to the webhook configurations themselves are never sent to webhooks (so a broken webhook cannot lock
its own configuration), nor are the virtual review resources. A mutating webhook with `reinvocationPolicy:
IfNeeded` is called a second time when a later one changed the object after it.
"""

from __future__ import annotations

import base64
import logging
import ssl
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson

from kubesemantics import cellib
from kubesemantics.selectors import label_selector_matches
from localkube.patch import PatchError, json_patch
from localkube.server.errors import ApiError, ServingError
from localkube.server.proxy import Proxy, ProxyTarget
from localkube.server.rbac import UserInfo
from localkube.server.registry import Registry, ResourceType
from localkube.storage import Store

log = logging.getLogger("localkube.webhooks")

GROUP = "admissionregistration.k8s.io"
MUTATING = "/registry/admissionregistration.k8s.io/mutatingwebhookconfigurations/"
VALIDATING = "/registry/admissionregistration.k8s.io/validatingwebhookconfigurations/"
REVIEW_VERSION = "admission.k8s.io/v1"
DEFAULT_TIMEOUT = 10


@dataclass
class Attributes:
    """One admission request: what is written, by whom, and the objects before and after."""

    operation: str  # CREATE, UPDATE or DELETE
    resource_type: ResourceType
    subresource: str
    namespace: str | None
    name: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    user: UserInfo
    dry_run: bool
    options: dict[str, Any] = field(default_factory=dict)
    # The webhooks' warnings, answered to the client as `Warning` headers.
    warnings: list[str] = field(default_factory=list)


class CallFailed(ServingError):
    """A webhook could not be called, or answered with something that is not a valid review."""


class Webhooks:
    """The configured webhooks of one API server, and the calls to them."""

    def __init__(self, store: Store, registry: Registry, proxy: Proxy) -> None:
        self._store = store
        self._registry = registry
        self._proxy = proxy

    def applies_to(self, resource_type: ResourceType, subresource: str | None) -> bool:
        """Whether some webhook's rules cover writes of this resource (or subresource), whatever the operation
        and object: a cheap test that spares every other write the webhook path."""
        if resource_type.group == GROUP or resource_type.virtual:
            return False
        if not (self._store.count(MUTATING) or self._store.count(VALIDATING)):
            return False
        for prefix in (MUTATING, VALIDATING):
            for configuration in self._store.list(prefix)[0]:
                for webhook in configuration.get("webhooks") or []:
                    if any(
                        _rule_matches(rule, None, subresource or "", candidate)
                        for candidate in self._candidates(webhook, resource_type)
                        for rule in webhook.get("rules") or []
                    ):
                        return True
        return False

    async def mutate(self, attributes: Attributes) -> dict[str, Any] | None:
        """Calls the matching mutating webhooks in turn; then, once, each whose `reinvocationPolicy` is
        IfNeeded and whose output a later webhook changed; returns the object they leave."""
        matching = self._matching(MUTATING, attributes)
        after: list[dict[str, Any] | None] = []
        for config_name, webhook, matched in matching:
            await self._mutate_once(config_name, webhook, matched, attributes)
            after.append(attributes.obj)
        for (config_name, webhook, matched), seen in zip(matching, after, strict=True):
            if webhook.get("reinvocationPolicy") == "IfNeeded" and seen != attributes.obj:
                await self._mutate_once(config_name, webhook, matched, attributes)
        return attributes.obj

    async def _mutate_once(
        self, config_name: str, webhook: dict[str, Any], matched: ResourceType, attributes: Attributes
    ) -> None:
        patch = await self._review(config_name, webhook, matched, attributes)
        if patch is not None and attributes.obj is not None:
            try:
                attributes.obj = json_patch(attributes.obj, patch)
            except PatchError as err:
                raise _internal(webhook["name"], f"JSONPatch failed: {err}") from err

    async def validate(self, attributes: Attributes) -> None:
        """Calls the matching validating webhooks; raises the first refusal or failure."""
        for config_name, webhook, matched in self._matching(VALIDATING, attributes):
            await self._review(config_name, webhook, matched, attributes)

    # -- matching ---------------------------------------------------------------------------------------

    def _matching(
        self, prefix: str, attributes: Attributes
    ) -> list[tuple[str, dict[str, Any], ResourceType]]:
        """(configuration name, webhook, the resource version it is sent) for each webhook that applies."""
        configurations = self._store.list(prefix)[0]
        found = []
        for configuration in configurations:
            config_name = configuration["metadata"]["name"]
            for webhook in configuration.get("webhooks") or []:
                matched = self._matched_version(webhook, attributes)
                if matched is not None and self._selected(webhook, attributes):
                    found.append((config_name, webhook, matched))
        return found

    def _candidates(self, webhook: dict[str, Any], own: ResourceType) -> list[ResourceType]:
        """The versions a webhook may see a request in: its own, and under matchPolicy Equivalent the other
        served versions of the same group and resource."""
        if webhook.get("matchPolicy", "Equivalent") != "Equivalent":
            return [own]
        others = [
            t
            for t in self._registry
            if t.group == own.group and t.plural == own.plural and t.version != own.version
        ]
        return [own, *others]

    def _matched_version(self, webhook: dict[str, Any], attributes: Attributes) -> ResourceType | None:
        for candidate in self._candidates(webhook, attributes.resource_type):
            if any(
                _rule_matches(rule, attributes.operation, attributes.subresource, candidate)
                for rule in webhook.get("rules") or []
            ):
                return candidate
        return None

    def _selected(self, webhook: dict[str, Any], attributes: Attributes) -> bool:
        object_selector = webhook.get("objectSelector") or {}
        if object_selector:
            labelled = [o for o in (attributes.obj, attributes.old) if o is not None]
            if not any(
                label_selector_matches(object_selector, (o.get("metadata") or {}).get("labels") or {})
                for o in labelled
            ):
                return False
        namespace_selector = webhook.get("namespaceSelector") or {}
        if not namespace_selector:
            return True
        resource_type = attributes.resource_type
        if resource_type.kind == "Namespace" and not resource_type.group:
            namespace = attributes.obj or attributes.old or {}
        elif resource_type.namespaced:
            namespace = self._store.get(f"/registry/core/namespaces/{attributes.namespace}") or {}
        else:
            return True
        return label_selector_matches(
            namespace_selector, (namespace.get("metadata") or {}).get("labels") or {}
        )

    # -- calling ----------------------------------------------------------------------------------------

    async def _review(
        self, config_name: str, webhook: dict[str, Any], matched: ResourceType, attributes: Attributes
    ) -> list[dict[str, Any]] | None:
        """Sends one review; returns the JSONPatch a mutating webhook answered with, if any."""
        name = webhook.get("name", config_name)
        request = _request(attributes, matched)
        try:
            if not _conditions_hold(webhook, request):
                return None
            response = await self._call(
                webhook, {"apiVersion": REVIEW_VERSION, "kind": "AdmissionReview", "request": request}
            )
            patch = _verdict(name, response, request["uid"])
            attributes.warnings += [str(w) for w in response["response"].get("warnings") or []]
            return patch
        except CallFailed as failure:
            if webhook.get("failurePolicy", "Fail") == "Ignore":
                log.warning("failed calling webhook %r, failing open: %s", name, failure)
                return None
            raise _internal(name, str(failure)) from failure

    async def _call(self, webhook: dict[str, Any], review: dict[str, Any]) -> dict[str, Any]:
        client_config = webhook.get("clientConfig") or {}
        timeout = int(webhook.get("timeoutSeconds") or DEFAULT_TIMEOUT)
        shown, target, server_name = self._destination(client_config, timeout)
        context = _tls_context(client_config.get("caBundle"))
        extensions = {"sni_hostname": server_name} if server_name else {}
        try:
            async with httpx.AsyncClient(verify=context, timeout=timeout, trust_env=False) as client:
                reply = await client.post(
                    target,
                    content=orjson.dumps(review),
                    headers={"content-type": "application/json", "accept": "application/json"},
                    extensions=extensions,
                )
        except httpx.TimeoutException as err:
            raise CallFailed(f'failed to call webhook: Post "{shown}": context deadline exceeded') from err
        except httpx.HTTPError as err:
            raise CallFailed(f'failed to call webhook: Post "{shown}": {_reason(err)}') from err
        if reply.status_code < 200 or reply.status_code >= 300:
            raise CallFailed(
                f"failed to call webhook: the server responded with the status code {reply.status_code} "
                f"but did not return more information"
            )
        try:
            body = orjson.loads(reply.content)
        except orjson.JSONDecodeError as err:
            raise CallFailed(f"received invalid webhook response: {err}") from err
        if not isinstance(body, dict):
            raise CallFailed("received invalid webhook response: not an AdmissionReview")
        return body

    def _destination(self, client_config: dict[str, Any], timeout: int) -> tuple[str, str, str | None]:
        """(the URL as messages show it, the URL dialled, the TLS server name when they differ)."""
        suffix = f"timeout={timeout}s"
        url = client_config.get("url")
        if url:
            shown = url + ("&" if "?" in url else "?") + suffix
            if urlsplit(url).scheme != "https":
                raise CallFailed(
                    f'failed to call webhook: webhook url must use the "https" scheme, got "{url}"'
                )
            return shown, shown, None
        service = client_config.get("service") or {}
        namespace, service_name = service.get("namespace", ""), service.get("name", "")
        port = int(service.get("port") or 443)
        path = service.get("path") or ""
        host = f"{service_name}.{namespace}.svc"
        shown = f"https://{host}:{port}{path}?{suffix}"
        try:
            base = self._proxy.resolve(
                ProxyTarget("services", namespace, service_name, "https", str(port), "")
            )
        except ApiError as err:
            raise CallFailed(f'failed to call webhook: Post "{shown}": {err.message}') from err
        return shown, f"{base}{path}?{suffix}", host


def _rule_matches(
    rule: dict[str, Any], operation: str | None, subresource: str, candidate: ResourceType
) -> bool:
    """Whether a rule covers the operation (None: any) on the subresource ("" for the resource itself)."""
    operations = rule.get("operations") or []
    if operation is not None and "*" not in operations and operation not in operations:
        return False
    if not _listed(rule.get("apiGroups"), candidate.group):
        return False
    if not _listed(rule.get("apiVersions"), candidate.version):
        return False
    scope = rule.get("scope", "*")
    if scope == "Cluster" and candidate.namespaced or scope == "Namespaced" and not candidate.namespaced:
        return False
    for entry in rule.get("resources") or []:
        resource, _, sub = str(entry).partition("/")
        if resource not in ("*", candidate.plural):
            continue
        if sub == "*" or sub == subresource:
            return True
    return False


def _conditions_hold(webhook: dict[str, Any], request: dict[str, Any]) -> bool:
    """Whether every matchCondition is true; CallFailed when one cannot be evaluated."""
    variables = {"object": request["object"], "oldObject": request["oldObject"], "request": request}
    for condition in webhook.get("matchConditions") or []:
        try:
            program, _ = cellib.compile_rule(str(condition.get("expression", "")))
            result = program.execute(cellib.context(variables))
        except (ArithmeticError, LookupError, ValueError, TypeError, RuntimeError) as err:
            raise CallFailed(
                f"failed to evaluate match conditions: expression '{condition.get('name', '')}' resulted in "
                f"error: {err}"
            ) from err
        if result is not True:
            return False
    return True


def _listed(values: list[str] | None, value: str) -> bool:
    values = values or []
    return "*" in values or value in values


_SUBRESOURCE_KINDS = {("", "pods", "binding"): {"group": "", "version": "v1", "kind": "Binding"}}


def _request(attributes: Attributes, matched: ResourceType) -> dict[str, Any]:
    """The AdmissionReview's request, with the objects in the matched version's form."""
    own = attributes.resource_type

    def gvk(t: ResourceType) -> dict[str, str]:
        return {"group": t.group, "version": t.version, "kind": t.kind}

    def gvr(t: ResourceType) -> dict[str, str]:
        return {"group": t.group, "version": t.version, "resource": t.plural}

    def shown(obj: dict[str, Any] | None) -> dict[str, Any] | None:
        if obj is None or kind:
            return obj
        return {**obj, "apiVersion": matched.api_version}

    # A subresource of a kind of its own is sent as that kind (pods/binding as a core/v1 Binding).
    kind = _SUBRESOURCE_KINDS.get((own.group, own.plural, attributes.subresource))
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": kind or gvk(matched),
        "resource": gvr(matched),
        "requestKind": kind or gvk(own),
        "requestResource": gvr(own),
        "name": attributes.name,
        "operation": attributes.operation,
        "userInfo": {"username": attributes.user.name, "groups": list(attributes.user.groups)},
        "object": shown(attributes.obj),
        "oldObject": shown(attributes.old),
        "dryRun": attributes.dry_run,
        "options": {
            "apiVersion": "meta.k8s.io/v1",
            "kind": attributes.operation.capitalize() + "Options",
            **attributes.options,
        },
    }
    if attributes.subresource:
        request["subResource"] = request["requestSubResource"] = attributes.subresource
    if attributes.namespace:
        request["namespace"] = attributes.namespace
    return request


def _verdict(name: str, review: dict[str, Any], uid: str) -> list[dict[str, Any]] | None:
    """Checks a webhook's answer; raises its refusal; returns its JSONPatch, if any."""
    if review.get("apiVersion") != REVIEW_VERSION or review.get("kind") != "AdmissionReview":
        raise CallFailed(
            f"received invalid webhook response: expected webhook response of {REVIEW_VERSION}, Kind=AdmissionReview, "
            f"got {review.get('apiVersion', '')}, Kind={review.get('kind', '')}"
        )
    response = review.get("response")
    if not isinstance(response, dict):
        raise CallFailed("received invalid webhook response: response is nil")
    if response.get("uid") != uid:
        raise CallFailed(
            f'received invalid webhook response: expected response.uid="{uid}", got "{response.get("uid", "")}"'
        )
    if not response.get("allowed"):
        raise _denied(name, response.get("status") or {})
    patch = response.get("patch")
    if patch is None:
        return None
    if response.get("patchType") != "JSONPatch":
        raise CallFailed(
            f'received invalid webhook response: expected patchType "JSONPatch", got "{response.get("patchType", "")}"'
        )
    try:
        ops = orjson.loads(base64.b64decode(patch))
    except (ValueError, orjson.JSONDecodeError) as err:
        raise CallFailed(f"received invalid webhook response: the patch is not valid: {err}") from err
    if not isinstance(ops, list):
        raise CallFailed("received invalid webhook response: the patch is not a JSON array")
    return ops


def _denied(name: str, status: dict[str, Any]) -> ApiError:
    denied_by = f'admission webhook "{name}" denied the request'
    code = int(status.get("code") or 0)
    if code < 400:
        code = 400
    message = status.get("message") or ""
    reason = status.get("reason") or ""
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    details = status.get("details")
    return ApiError(code, reason, text, details if isinstance(details, dict) else None)


def _internal(name: str, why: str) -> ApiError:
    message = f'failed calling webhook "{name}": {why}'
    return ApiError(
        500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]}
    )


def _tls_context(ca_bundle: str | None) -> ssl.SSLContext:
    if not ca_bundle:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(ca_bundle).decode()
        return ssl.create_default_context(cadata=pem)
    except (ValueError, ssl.SSLError) as err:
        raise CallFailed(f"failed to call webhook: the caBundle is not valid PEM: {err}") from err


def _reason(err: httpx.HTTPError) -> str:
    """Why a connection failed, in the Go client's words where they are known."""
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"tls: failed to verify certificate: {cause.verify_message}"
        if isinstance(cause, ConnectionRefusedError) or "refused" in str(cause).lower():
            url = err.request.url if isinstance(err, httpx.RequestError) else None
            where = f"{url.host}:{url.port}" if url is not None else ""
            return f"dial tcp {where}: connect: connection refused"
        cause = cause.__cause__ or cause.__context__
    return str(err) or type(err).__name__
