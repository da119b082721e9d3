"""The real Kubernetes control plane as a subprocess group for tests (issue 20): etcd, kube-apiserver,
kube-controller-manager and kube-scheduler on loopback, built by `scripts/realkube build`.

`RealKubeProcess(data_dir)` lays its data directory out as localkube does (`kubeconfig`, `admin-token`,
`pki/ca.crt`), so the access half of `LocalKubeProcess` (`client()`, `apply_files()`,
`service_account_kubeconfig()`) serves both; only the lifecycle differs. What it makes there:
- `pki/`: a CA and a serving certificate for localhost, 127.0.0.1 and the `kubernetes` Service's names
  (localkube's `issue`), and the service-account signing key (EC P-256).
- `tokens.csv`: static bearer tokens (kube-apiserver's `--token-auth-file`) for the admin (group
  system:masters), the controller-manager, the scheduler and one node, `system:node:<NODE_NAME>` (group
  system:nodes, so the Node authorizer and NodeRestriction judge it as they judge a kubelet). Tokens rather
  than client certificates: one credential kind for every component, and the same `Authorization` header
  the tests already send to localkube.
- a kubeconfig per identity (`kubeconfig` is the admin's, `node.kubeconfig` the node's).
The API server runs with `--authorization-mode=Node,RBAC` and its default admission plugins plus
NodeRestriction (on loopback, with `--enable-aggregator-routing`: there is no kube-proxy, so a webhook's
`service` is dialled on its endpoints, which must name a non-loopback address of this machine, not on its
ClusterIP); the controller-manager with `--use-service-account-credentials` (each controller its own
ServiceAccount, as on a kubeadm cluster) and its default controllers (service-account tokens, garbage
collector, namespace, Job, ...). `start()` returns when /readyz answers and the controller-manager has made
the `default` ServiceAccount. Each process logs to `data_dir/<name>.log`.

    PYTHONPATH=tests python -m support.realkube_process --bin DIR [--dir DATA]   # what `scripts/realkube up` runs
"""

from __future__ import annotations

import argparse
import ipaddress
import secrets
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from kuberay.local.ports import free_port
from localkube.node.network import bridge_gateways
from localkube.server.tls import issue
from support import stopping
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess

REPO = Path(__file__).resolve().parents[2]
NODE_NAME = "localkube-node"
# A second node's identity, for a test that attaches an agent of its own beside the session's node.
SPARE_NODE_NAME = "agent-node"
# The containers backend's node: a real kubelet (tests/support/containerkube.py).
KUBELET_NODE_NAME = "kuberay-node"
SERVICE_CIDR = "10.96.0.0/12"
_SERVING_NAMES = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                  "kubernetes.default.svc.cluster.local"]  # fmt: skip
_SERVING_ADDRESSES = ["127.0.0.1", "10.96.0.1"]
# identity -> (user name, groups)
_IDENTITIES = {
    "admin": ("kubernetes-admin", "system:masters"),
    "controller-manager": ("system:kube-controller-manager", ""),
    "scheduler": ("system:kube-scheduler", ""),
    "node": (f"system:node:{NODE_NAME}", "system:nodes"),
    "spare-node": (f"system:node:{SPARE_NODE_NAME}", "system:nodes"),
    "kubelet": (f"system:node:{KUBELET_NODE_NAME}", "system:nodes"),
    # The containers backend's kube-proxy (bound to system:node-proxier by the API server's bootstrap RBAC)
    # and CoreDNS (bound to its ClusterRole by tests/support/containerkube.py).
    "kube-proxy": ("system:kube-proxy", ""),
    "coredns": ("system:coredns", ""),
}


def provisioned_volumes(directory: Path, count: int = 4) -> list[dict[str, object]]:
    """hostPath PersistentVolumes without a class, what a provisioner would have made: realkube has none, and
    a claim without a class binds to one of these (kube-controller-manager's binder)."""
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"realkube-volume-{index}"},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": str(directory / str(index)), "type": "DirectoryOrCreate"},
            },
        }
        for index in range(count)
    ]


class RealKubeProcess(LocalKubeProcess):
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler, with localkube's access methods."""

    def __init__(
        self, data_dir: Path, bin_dir: Path, address: str = "127.0.0.1", command_prefix: Sequence[str] = ()
    ) -> None:
        """`address`: where the API server listens and what it advertises (loopback unless a node in another
        network namespace must reach it); `command_prefix`: what each process is started under (the containers
        backend's `nsenter --net=...`)."""
        super().__init__(data_dir)
        self.bin_dir = bin_dir
        self.address = address
        self.command_prefix = list(command_prefix)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.startup_seconds = 0.0

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> RealKubeProcess:
        """Starts the four processes; returns once the API server is ready and the controllers run."""
        assert not self.processes, "already running"
        started = time.monotonic()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._write_credentials()
        etcd_port, peer_port = free_port(), free_port()
        self.port = free_port()
        self._url = f"https://{self.address}:{self.port}"
        for identity in _IDENTITIES:
            self._write_kubeconfig(identity)
        etcd = f"http://127.0.0.1:{etcd_port}"
        peer = f"http://127.0.0.1:{peer_port}"
        self._spawn("etcd", [
            "--name=realkube", f"--data-dir={self.data_dir / 'etcd'}",
            f"--listen-client-urls={etcd}", f"--advertise-client-urls={etcd}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=realkube={peer}",
            # A test store: losing the last writes on a power cut does not matter, fsync latency does.
            "--unsafe-no-fsync",
        ])  # fmt: skip
        pki = self.data_dir / "pki"
        self._spawn("kube-apiserver", [
            f"--etcd-servers={etcd}", f"--bind-address={self.address}", f"--advertise-address={self.address}",
            f"--secure-port={self.port}", f"--cert-dir={pki}",
            f"--tls-cert-file={pki / 'server.crt'}", f"--tls-private-key-file={pki / 'server.key'}",
            f"--client-ca-file={self.ca_cert}", f"--token-auth-file={self.data_dir / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--allow-privileged=true", "--profiling=false",
            *self._apiserver_node_args(),
        ])  # fmt: skip
        deadline = started + timeout
        self._wait_ready(deadline)
        for name, identity in (
            ("kube-controller-manager", "controller-manager"),
            ("kube-scheduler", "scheduler"),
        ):
            kubeconfig = self.data_dir / f"{identity}.kubeconfig"
            extra = [
                "--use-service-account-credentials=true", f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={self.ca_cert}", f"--service-cluster-ip-range={SERVICE_CIDR}",
            ] if identity == "controller-manager" else []  # fmt: skip
            self._spawn(name, [
                f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}", "--leader-elect=false",
                "--bind-address=127.0.0.1", f"--secure-port={free_port()}", f"--cert-dir={pki / name}", *extra,
            ])  # fmt: skip
        self._wait_for_default_service_account(deadline)
        self.startup_seconds = time.monotonic() - started
        return self

    def _apiserver_node_args(self) -> list[str]:
        if ipaddress.ip_address(self.address).is_loopback:
            # The endpoint reconciler refuses a loopback address for the `kubernetes` Service's endpoints.
            # No kube-proxy here: a webhook's (or a CRD conversion's) `service` is reached on its
            # EndpointSlices' address, not its ClusterIP, which nothing routes (buildServiceResolver).
            return ["--endpoint-reconciler-type=none", "--enable-aggregator-routing=true"]
        # A real kubelet: reached on its node's address (its name resolves nowhere), for logs, exec, port-forward.
        return ["--kubelet-preferred-address-types=InternalIP"]

    def _spawn(
        self, name: str, args: list[str], binary: Path | None = None, env: dict[str, str] | None = None
    ) -> None:
        with (self.data_dir / f"{name}.log").open("ab") as log:
            self.processes[name] = subprocess.Popen(
                [*self.command_prefix, str(binary or self.bin_dir / name), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )

    def _check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}; see {self.data_dir / name}.log")

    def _wait_ready(self, deadline: float) -> None:
        def ready() -> bool:
            self._check_alive()
            try:
                with self.client(timeout=2) as client:
                    return client.get("/readyz").status_code == 200
            except httpx.TransportError:
                return False

        what = f"kube-apiserver ready (see {self.data_dir}/kube-apiserver.log)"
        eventually(ready, deadline - time.monotonic(), what, every=0.1, blocking=True)

    def _wait_for_default_service_account(self, deadline: float) -> None:
        # Pods are refused until their namespace's `default` ServiceAccount exists: the controllers' first sign.
        with self.client(timeout=5) as client:

            def made() -> bool:
                self._check_alive()
                return client.get("/api/v1/namespaces/default/serviceaccounts/default").status_code == 200

            what = f"kube-controller-manager's default ServiceAccount (see {self.data_dir})"
            eventually(made, deadline - time.monotonic(), what, every=0.2, blocking=True)

    def wait_node_ready(self, name: str, timeout: float = 60.0) -> None:
        """Returns once the Node `name` reports Ready (its agent registered it); adds the wait to startup_seconds."""
        started = time.monotonic()
        with self.client(timeout=5) as client:

            def ready() -> bool:
                self._check_alive()
                node = client.get(f"/api/v1/nodes/{name}")
                conditions = (
                    node.json().get("status", {}).get("conditions", []) if node.status_code == 200 else []
                )
                return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

            eventually(
                ready, timeout, f"the node {name} Ready on the real control plane", every=0.2, blocking=True
            )
        self.startup_seconds += time.monotonic() - started

    @contextmanager
    def placing_on(self, node: str) -> Iterator[None]:
        """While a test's own agent runs the node `node` beside the session's (NODE_NAME): the session's node
        cordoned, so that the scheduler places the test's pods on `node`; afterwards the Node `node` deleted
        (later pods must not go to a node nobody runs) and the session's node uncordoned."""
        self._cordon(NODE_NAME, True)
        try:
            yield
        finally:
            with self.client() as admin:
                admin.delete(f"/api/v1/nodes/{node}").raise_for_status()
            self._cordon(NODE_NAME, False)

    def _cordon(self, node: str, unschedulable: bool) -> None:
        with self.client() as admin:
            admin.patch(
                f"/api/v1/nodes/{node}",
                json={"spec": {"unschedulable": unschedulable}},
                headers={"Content-Type": "application/merge-patch+json"},
            ).raise_for_status()

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to each, in reverse start order (etcd last); SIGKILL for one that lingers."""
        for name in reversed(list(self.processes)):
            stopping.stop(self.processes.pop(name), timeout)

    def kill(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        self.processes.clear()

    # -- credentials ----------------------------------------------------------------------------------

    def _write_credentials(self) -> None:
        pki = self.data_dir / "pki"
        pki.mkdir(mode=0o700, exist_ok=True)
        if not (pki / "sa.key").exists():
            names = [x509.DNSName(name) for name in _SERVING_NAMES]
            # Process-mode pods dial the API server on their bridge's gateway, as they do on localkube.
            addresses = dict.fromkeys([*_SERVING_ADDRESSES, *bridge_gateways(), self.address])
            names += [x509.IPAddress(ipaddress.ip_address(address)) for address in addresses]
            ca_pem, cert_pem, key_pem = issue("realkube-ca", "kube-apiserver", names)
            (pki / "ca.crt").write_bytes(ca_pem)
            (pki / "server.crt").write_bytes(cert_pem)
            (pki / "server.key").write_bytes(key_pem)
            signing = ec.generate_private_key(ec.SECP256R1())
            (pki / "sa.pub").write_bytes(
                signing.public_key().public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                )
            )
            (pki / "sa.key").write_bytes(
                signing.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )
        tokens = self.data_dir / "tokens.csv"
        if not tokens.exists():
            rows = []
            for identity, (user, groups) in _IDENTITIES.items():
                token = secrets.token_urlsafe(32)
                (self.data_dir / f"{identity}-token").write_text(token + "\n")
                rows.append(f'{token},{user},{user},"{groups}"' if groups else f"{token},{user},{user}")
            tokens.write_text("\n".join(rows) + "\n")

    def _write_kubeconfig(self, identity: str) -> None:
        token = (self.data_dir / f"{identity}-token").read_text().strip()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "realkube",
                    "cluster": {"server": self.url, "certificate-authority": str(self.ca_cert)},
                }
            ],
            "users": [{"name": identity, "user": {"token": token}}],
            "contexts": [{"name": "realkube", "context": {"cluster": "realkube", "user": identity}}],
            "current-context": "realkube",
        }
        name = "kubeconfig" if identity == "admin" else f"{identity}.kubeconfig"
        (self.data_dir / name).write_text(yaml.safe_dump(config))

    @property
    def node_kubeconfig(self) -> Path:
        """The kubeconfig of the node `NODE_NAME` (for `localkube agent`)."""
        return self.data_dir / "node.kubeconfig"

    @property
    def spare_node_kubeconfig(self) -> Path:
        """The kubeconfig of the node `SPARE_NODE_NAME`."""
        return self.data_dir / "spare-node.kubeconfig"


def main() -> None:
    parser = argparse.ArgumentParser(description="Runs the real control plane on loopback until Ctrl-C.")
    parser.add_argument(
        "--bin", type=Path, required=True, help="directory of the binaries (scripts/realkube build)"
    )
    parser.add_argument("--dir", type=Path, help="data directory (default: a new temporary one)")
    args = parser.parse_args()
    data_dir = args.dir or Path(tempfile.mkdtemp(prefix="realkube-"))
    serve_until_interrupted(RealKubeProcess(data_dir, args.bin), "realkube")


def serve_until_interrupted(server: RealKubeProcess, name: str) -> None:
    """Starts `server`, says where it is, and runs it until SIGINT or SIGTERM; then stops it, whole."""
    try:
        server.start()
        print(f"{name} ready in {server.startup_seconds:.1f} s at {server.url}", flush=True)
        print(f"export KUBECONFIG={server.kubeconfig}", flush=True)
        for signum in (signal.SIGINT, signal.SIGTERM):  # SIGINT too: a background job starts with it ignored
            signal.signal(signum, signal.default_int_handler)
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):  # a second Ctrl-C must not cut the clean-up short
            signal.signal(signum, signal.SIG_IGN)
        server.stop()


if __name__ == "__main__":
    main()
