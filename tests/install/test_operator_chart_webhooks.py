"""helm-chart/kuberay-operator's `webhooks.enabled`: the three validating webhooks (the same as
deploy/webhook registers, in the release's namespace), their Service, cert-manager's Issuer and
Certificate, and an operator that serves them with the certificate's Secret mounted where it reads it.
The chart installed with real cert-manager, and the webhooks refusing objects: tests/integration/operator/
test_webhook_chart.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from install.rendered import find, validate_all
from kuberay.operator import nodelabels, settings, webhooks
from support.helm import CHARTS, Helm

REPO = Path(__file__).resolve().parents[2]
CHART = "kuberay-operator"
ENABLED = {"webhooks": {"enabled": True}}
WEBHOOK_KINDS = {"Issuer", "Certificate", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}


def operator_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (found,) = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    container: dict[str, Any] = found
    return container


def test_off_by_default(helm: Helm) -> None:
    objects = helm.template(CHART)
    assert not [o for o in objects if o["kind"] in WEBHOOK_KINDS]
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Service"] == ["kuberay-operator"]
    container = operator_container(objects)
    assert "env" not in container and [p["containerPort"] for p in container["ports"]] == [8080]


def test_three_validating_webhooks_as_deploy_webhook_registers_them(helm: Helm) -> None:
    objects = helm.template(CHART, ENABLED, namespace="kuberay-system")
    validate_all(objects)
    configuration = find(
        objects, "ValidatingWebhookConfiguration", "kuberay-validating-webhook-configuration"
    )
    assert configuration["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "kuberay-system/serving-cert"
    }
    assert [w["name"] for w in configuration["webhooks"]] == [w.name for w in webhooks.WEBHOOKS]
    shipped = yaml.safe_load((REPO / "deploy" / "webhook" / "manifests.yaml").read_text())["webhooks"]
    for webhook in shipped:
        webhook["clientConfig"]["service"]["namespace"] = "kuberay-system"
    assert configuration["webhooks"] == shipped
    for webhook, served in zip(configuration["webhooks"], webhooks.WEBHOOKS, strict=True):
        assert webhook["clientConfig"]["service"] == {
            "name": "kuberay-webhook-service", "namespace": "kuberay-system", "path": served.path,
        }  # fmt: skip
        assert webhook["rules"] == [
            {"apiGroups": ["ray.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
             "resources": [served.kind.lower() + "s"]}
        ]  # fmt: skip
        assert (webhook["failurePolicy"], webhook["sideEffects"]) == ("Fail", "None")


def test_node_label_deliverys_mutating_webhooks_as_deploy_webhook_registers_them(helm: Helm) -> None:
    objects = helm.template(CHART, ENABLED, namespace="kuberay-system")
    configuration = find(objects, "MutatingWebhookConfiguration", "kuberay-mutating-webhook-configuration")
    assert configuration["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "kuberay-system/serving-cert"
    }
    shipped = yaml.safe_load((REPO / "deploy" / "webhook" / "mutating.yaml").read_text())["webhooks"]
    for webhook in shipped:
        webhook["clientConfig"]["service"]["namespace"] = "kuberay-system"
    assert configuration["webhooks"] == shipped
    pods, bindings = configuration["webhooks"]
    # Ray pods only, failing closed; every binding (a Binding has no labels to select on), failing open.
    assert (pods["name"], pods["clientConfig"]["service"]["path"], pods["failurePolicy"]) == ("mpod.kb.io", nodelabels.POD_PATH, "Fail")  # fmt: skip
    assert pods["objectSelector"] == {"matchLabels": {"ray.io/is-ray-node": "yes"}}
    assert pods["rules"][0]["resources"] == ["pods"]
    assert (bindings["name"], bindings["clientConfig"]["service"]["path"], bindings["failurePolicy"]) == ("mbinding.kb.io", nodelabels.BINDING_PATH, "Ignore")  # fmt: skip
    assert bindings["rules"] == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods/binding"]}]  # fmt: skip
    assert "objectSelector" not in bindings
    # Its one side effect (the RequiredNodeLabelMissing Event) is not made on a dry run.
    assert (pods["sideEffects"], bindings["sideEffects"]) == ("None", "NoneOnDryRun")
    # The binding webhook reads the Node.
    rules = find(objects, "ClusterRole", "kuberay-operator")["rules"]
    assert {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]} in rules


def test_cert_manager_issues_the_certificate_of_the_service(helm: Helm) -> None:
    objects = helm.template(CHART, ENABLED, namespace="kuberay-system")
    assert find(objects, "Issuer", "selfsigned-issuer")["spec"] == {"selfSigned": {}}
    assert find(objects, "Certificate", "serving-cert")["spec"] == {
        "dnsNames": ["kuberay-webhook-service.kuberay-system.svc", "kuberay-webhook-service.kuberay-system.svc.cluster.local"],  # noqa: E501
        "issuerRef": {"kind": "Issuer", "name": "selfsigned-issuer"},
        "secretName": "webhook-server-cert",
    }  # fmt: skip
    service = find(objects, "Service", "kuberay-webhook-service")
    pods = find(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pods.items()
    assert service["spec"]["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": 9443}]


def test_the_operator_serves_them_with_the_secret_mounted(helm: Helm) -> None:
    values = {**ENABLED, "env": [{"name": "ENABLE_PROBES_INJECTION", "value": "false"}]}
    objects = helm.template(CHART, values)
    pod = find(objects, "Deployment")["spec"]["template"]["spec"]
    container = operator_container(objects)
    assert container["env"] == [
        {"name": "ENABLE_WEBHOOKS", "value": "true"}, {"name": "ENABLE_PROBES_INJECTION", "value": "false"},
    ]  # fmt: skip
    (port,) = [p for p in container["ports"] if p["name"] == "webhook-server"]
    assert {"name": "cert", "secret": {"defaultMode": 420, "secretName": "webhook-server-cert"}} in pod[
        "volumes"
    ]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "cert"]
    # What the operator makes of its arguments and environment: the webhooks on, at that port and directory.
    parsed = settings.parse(container["args"], environ={e["name"]: e["value"] for e in container["env"]})
    assert parsed.environment.webhook.enabled
    assert (parsed.webhook.port, parsed.webhook.cert_dir) == (port["containerPort"], mount["mountPath"])
    assert mount["readOnly"] is True


def test_lint_with_webhooks(helm: Helm) -> None:
    result = helm.run("lint", "--strict", str(CHARTS / CHART), "--set", "webhooks.enabled=true")
    assert "0 chart(s) failed" in result.stdout
