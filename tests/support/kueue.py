"""The real Kueue for tests: `scripts/tools/kueue/build` builds its manager once from Kueue's Go module (pinned
version) into the shared cache, beside the module's own kustomize bases (`config/components`); the session
fixture `kueue` (tests/e2e/kueue/conftest.py) is that directory.

`Kueue.install(home, kubeconfig, directory)` installs it on a control plane the way the module's
config/default does, with the manager as a host process rather than a Deployment:

- the `kueue-system` namespace, Kueue's CRDs (server-side: too large for a client-side apply), the five with
  a conversion webhook given it (crd/kustomization.yaml's patches: Kueue's certificate rotator injects its CA
  into those CRDs and into both webhook configurations, and is not ready until it has);
- the webhook Service `kueue-webhook-service` with no selector and an Endpoints object naming the manager's
  port on its webhook host, which is where the API server's calls (resolved through the Service's endpoints,
  the certificate checked for `kueue-webhook-service.kueue-system.svc`) reach it. On localkube that host is
  127.0.0.1 (its webhook client dials the Endpoints' address, on this machine); on the real control plane
  it is this machine's default-route address (tests/support/hostaddress.py), dialled through the
  EndpointSlice the controller-manager mirrors from the Endpoints (its API server runs with
  `--enable-aggregator-routing`, tests/support/realkube_process.py), since endpoint validation refuses the
  loopback range (pkg/apis/core/validation ValidateEndpointIP);
- the empty Secret `kueue-webhook-server-cert` the rotator fills, and the webhook configurations, named and
  namespaced as kustomize would (`kueue-` prefix, `kueue-system`), with config/components/webhook's
  namespaceSelectors for the pod, deployment and statefulset webhooks;
- the manager, `bin/kueue --config` with the Configuration `configuration()` writes (the integrations it is
  given, `ray.io/rayjob` and `ray.io/raycluster` by default; internal certificate management; its webhook
  server on the webhook host, its health port on 127.0.0.1; no leader election, no metrics server, no
  visibility server, whose aggregated API this install does not register), against `kubeconfig`;
- the kubelet's part, done here: once the rotator has written the Secret, its `tls.crt`/`tls.key` are copied
  into the manager's certDir (where a pod would have the Secret mounted); the rotator waits for them there.

`install` returns once the manager's /readyz answers 200 (its webhook server serving, the CA injected).
`uninstall()` deletes the webhook configurations first (so nothing else on the control plane is refused for
want of Kueue), then every object of Kueue's kinds while the manager still runs (it holds finalizers on
Workloads, ClusterQueues and ResourceFlavors that only it removes), then stops it and deletes the CRDs and its
namespace: what a shared control plane (the session's realkube) must be left as for later tests.
"""

from __future__ import annotations

import base64
import copy
import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import httpx
import yaml

from support import kubectl, stopping
from support.eventually import eventually

NAMESPACE = "kueue-system"
PREFIX = "kueue-"
WEBHOOK_SERVICE = "kueue-webhook-service"
WEBHOOK_SECRET = "kueue-webhook-server-cert"
MUTATING = "kueue-mutating-webhook-configuration"
VALIDATING = "kueue-validating-webhook-configuration"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
RAY_INTEGRATIONS = ("ray.io/rayjob", "ray.io/raycluster")
# Starting the manager (its caches, the certificate bootstrap) on a loaded two-core machine: a bound.
READY_TIMEOUT = 120.0


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def _documents(path: Path) -> list[dict[str, Any]]:
    with path.open() as f:
        return [doc for doc in yaml.load_all(f, Loader=yaml.CSafeLoader) if doc]


def _service_reference(reference: dict[str, Any]) -> None:
    """A webhook's `clientConfig.service` as kustomize's nameReference and namespace transformers leave it."""
    reference["name"] = PREFIX + reference["name"]
    reference["namespace"] = NAMESPACE


class Kueue:
    def __init__(self, home: Path, kubeconfig: Path | str, directory: Path, webhook_host: str) -> None:
        self.home, self.kubeconfig, self.directory = home, str(kubeconfig), directory
        self.components = home / "config" / "components"
        self.log = directory / "kueue.log"
        self.cert_dir = directory / "serving-certs"
        self.webhook_host = webhook_host
        self.webhook_port = free_port(self.webhook_host)
        self.health_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def kubectl(self, *args: str, input: str | None = None) -> str:
        return kubectl.run(self.kubeconfig, *args, input=input)

    # -- the manifests ----------------------------------------------------------------------------------

    def crds(self) -> list[dict[str, Any]]:
        """Kueue's CRDs, those crd/kustomization.yaml patches with their conversion webhook."""
        crd_dir = self.components / "crd"
        kustomization = yaml.safe_load((crd_dir / "kustomization.yaml").read_text())
        crds = {doc["metadata"]["name"]: doc for path in sorted((crd_dir / "bases").glob("*.yaml"))
                for doc in _documents(path)}  # fmt: skip
        for entry in kustomization.get("patches") or []:
            (patch,) = _documents(crd_dir / entry["path"])
            conversion = copy.deepcopy(patch["spec"]["conversion"])
            _service_reference(conversion["webhook"]["clientConfig"]["service"])
            crds[patch["metadata"]["name"]]["spec"]["conversion"] = conversion
        return list(crds.values())

    def webhook_configurations(self) -> list[dict[str, Any]]:
        webhook_dir = self.components / "webhook"
        kustomization = yaml.safe_load((webhook_dir / "kustomization.yaml").read_text())
        selectors: dict[tuple[str, str], dict[str, Any]] = {}
        for entry in kustomization.get("patches") or []:
            patch = yaml.safe_load(entry["patch"])
            for webhook in patch["webhooks"]:
                selectors[(patch["kind"], webhook["name"])] = webhook["namespaceSelector"]
        configurations = _documents(webhook_dir / "manifests.yaml")
        for configuration in configurations:
            configuration["metadata"]["name"] = PREFIX + configuration["metadata"]["name"]
            for webhook in configuration["webhooks"]:
                _service_reference(webhook["clientConfig"]["service"])
                selector = selectors.get((configuration["kind"], webhook["name"]))
                if selector is not None:
                    webhook["namespaceSelector"] = selector
        return configurations

    def webhook_service(self) -> list[dict[str, Any]]:
        """The Service (no selector: no pod backs it) and its Endpoints, the manager's port on this host."""
        (service,) = _documents(self.components / "webhook" / "service.yaml")
        service["metadata"] = {"name": WEBHOOK_SERVICE, "namespace": NAMESPACE}
        port = service["spec"]["ports"][0]
        endpoints = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": WEBHOOK_SERVICE, "namespace": NAMESPACE},
            "subsets": [{"addresses": [{"ip": self.webhook_host}],
                         "ports": [{"port": self.webhook_port, "protocol": port.get("protocol", "TCP")}]}],
        }  # fmt: skip
        return [service, endpoints]

    def configuration(self, integrations: tuple[str, ...]) -> dict[str, Any]:
        return {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": NAMESPACE,
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.health_port}"},
            "metrics": {"bindAddress": "0"},
            "webhook": {"host": self.webhook_host, "port": self.webhook_port, "certDir": str(self.cert_dir)},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {
                "enable": True,
                "webhookServiceName": WEBHOOK_SERVICE,
                "webhookSecretName": WEBHOOK_SECRET,
            },
            "integrations": {"frameworks": list(integrations)},
            # The visibility server is an aggregated API server; this install registers no APIService for it.
            "featureGates": {"VisibilityOnDemand": False},
        }

    # -- installing -------------------------------------------------------------------------------------

    def apply(self, objects: list[dict[str, Any]]) -> None:
        stream = "".join(f"---\n{json.dumps(obj)}\n" for obj in objects)
        self.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=kueue-install", "-f", "-",
                     input=stream)  # fmt: skip

    @classmethod
    def install(
        cls,
        home: Path,
        kubeconfig: Path | str,
        directory: Path,
        integrations: tuple[str, ...] = RAY_INTEGRATIONS,
        webhook_host: str = "127.0.0.1",
    ) -> Kueue:
        """`webhook_host`: where the webhook server listens and its Endpoints point; 127.0.0.1 on localkube,
        whose webhook client dials this machine's addresses only, `host_address()` on the real control plane."""
        kueue = cls(home, kubeconfig, directory, webhook_host)
        directory.mkdir(parents=True, exist_ok=True)
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        crds = kueue.crds()
        kueue.apply([namespace, *crds])
        # Not `kubectl wait`, nor a jsonpath filter: both fail, rather than wait, on a CRD the API server has not
        # given conditions yet.
        names = [f"crd/{crd['metadata']['name']}" for crd in crds]

        def established() -> bool:
            found = json.loads(kueue.kubectl("get", *names, "-o", "json"))["items"]
            return len(found) == len(names) and all(
                any(c["type"] == "Established" and c["status"] == "True"
                    for c in (crd.get("status") or {}).get("conditions") or [])
                for crd in found
            )  # fmt: skip

        eventually(established, 60, "Kueue's CRDs established", every=0.5, blocking=True)
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": WEBHOOK_SECRET, "namespace": NAMESPACE},
        }
        kueue.apply([*kueue.webhook_service(), secret, *kueue.webhook_configurations()])
        config = directory / "kueue-config.yaml"
        config.write_text(yaml.safe_dump(kueue.configuration(integrations)))
        kueue.start(config)
        return kueue

    def start(self, config: Path) -> None:
        self.cert_dir.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [str(self.home / "bin" / "kueue"), f"--config={config}", f"--kubeconfig={self.kubeconfig}"],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            self._mount_certificates()
            eventually(
                self._ready, READY_TIMEOUT, lambda: f"Kueue ready:\n{self.tail()}", every=0.5, blocking=True
            )
        except BaseException:
            self.stop()
            raise

    def _mount_certificates(self) -> None:
        """What the kubelet does for the manager's pod: the rotator's Secret, as files in its certDir."""

        def issued() -> dict[str, str]:
            self._alive()
            found = json.loads(self.kubectl("get", "secret", WEBHOOK_SECRET, "-n", NAMESPACE, "-o", "json"))
            data: dict[str, str] = found.get("data") or {}
            return data if "tls.crt" in data and "tls.key" in data else {}

        data = eventually(issued, READY_TIMEOUT, lambda: f"Kueue's certificates:\n{self.tail()}", every=0.5,
                          blocking=True)  # fmt: skip
        for key, value in data.items():
            staged = self.cert_dir / f".{key}"
            staged.write_bytes(base64.b64decode(value))
            staged.rename(self.cert_dir / key)

    def _alive(self) -> None:
        assert self.process is not None and self.process.poll() is None, (
            f"Kueue exited ({self.process and self.process.returncode}):\n{self.tail()}"
        )

    def _ready(self) -> bool:
        self._alive()
        try:
            return httpx.get(f"http://127.0.0.1:{self.health_port}/readyz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def tail(self, lines: int = 40) -> str:
        return (
            "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""
        )

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        stopping.stop(self.process)

    def uninstall(self) -> None:
        self.kubectl("delete", "mutatingwebhookconfiguration", MUTATING, "--ignore-not-found")
        self.kubectl("delete", "validatingwebhookconfiguration", VALIDATING, "--ignore-not-found")
        names = [crd["metadata"]["name"] for crd in self.crds()]
        if self.running():
            # `<plural>.<group>` names the kind for kubectl; a cluster-scoped one ignores --all-namespaces.
            self.kubectl("delete", ",".join(names), "--all", "--all-namespaces", "--ignore-not-found",
                         "--timeout=120s")  # fmt: skip
        self.stop()
        self.kubectl("delete", "crd", "--ignore-not-found", "--timeout=120s", *names)
        self.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--timeout=120s")
