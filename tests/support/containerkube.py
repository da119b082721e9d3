"""The containers backend (issue 47): the real control plane with a real node, kubelet on containerd.

`ContainerKube(data_dir, ...)` is `RealKubeProcess` (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler) plus the parts of a real node, all built from their Go modules (scripts/realkube,
scripts/tools/node) at pinned versions: containerd with its runc shim (Debian's runc: crun refuses this
machine's hybrid cgroups), kubelet, kube-proxy (iptables mode) and CoreDNS behind the `kube-dns` Service
(10.96.0.10), as the cluster DNS. Pods get their addresses from Debian's CNI plugins (`bridge`,
`host-local`, `portmap`, `loopback`) on the bridge `cni0`, `POD_CIDR`. Images come from
scripts/tools/images' archives, imported into containerd's `k8s.io` namespace as `kind load` does (there is
no registry), so pods name them as upstream's manifests do (`rayproject/ray:2.52.0`, `kuberay:latest`).

Everything runs in a network namespace of its own, `kuberay-node`, joined to the host by a veth pair
(`HOST_ADDRESS` on the host, `NODE_ADDRESS` in the namespace), with host routes to the pod and Service
ranges through it: kubelet's and kube-proxy's iptables chains, the bridge and IP forwarding stay in there
and go with it, and the host reaches the API server, pods and ClusterIPs as a machine on the node's network
would. The mount namespace is the host's, which kubelet and containerd must share; what they change there
(sysctls, cgroups, mounts, paths) is noted before and undone after (tests/support/host_changes.py).

This machine's limits need three settings: containerd's `restrict_oom_score_adj` (lowering a process's OOM
score needs CAP_SYS_RESOURCE, which the sandbox lacks), kubelet's `failCgroupV1: false` (cgroups v1), and
no rlimits above the hard ones (containerd's CRI sets none). The kubelet serves its API (logs, exec,
port-forward) on the node's address with anonymous access allowed: it is reachable only from this machine,
and the API server has no client certificate to present to it.

    PYTHONPATH=tests python -m support.containerkube   # what `bash scripts/containerkube up` runs
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from support import stopping
from support.eventually import eventually
from support.host_changes import HostChanges, kill_pod_processes, kill_processes_naming, restore_left_over
from support.realkube_process import KUBELET_NODE_NAME, RealKubeProcess, serve_until_interrupted

NETNS = "kuberay-node"
HOST_LINK, NODE_LINK = "kuberay-host", "kuberay-node"
# Off every localkube bridge (10.246.0.0/16 and below, the process tests' 10.247.0.0/16): a containers test
# runs while process-mode tests set up their bridges on other workers.
HOST_ADDRESS, NODE_ADDRESS = "10.249.0.1", "10.249.0.2"
POD_CIDR = "10.248.0.0/24"
SERVICE_CIDR = "10.96.0.0/12"
DNS_ADDRESS = "10.96.0.10"
CLUSTER_DOMAIN = "cluster.local"
# Sockets live here, not under the data directory: a unix socket's path has at most 107 bytes.
RUNTIME_DIR = Path("/run/kuberay-node")
# What the last start noted of the host, for the next start to repair if that run was killed.
HOST_RECORD = RUNTIME_DIR.parent / "kuberay-node.host.json"
NSENTER = ["nsenter", f"--net=/run/netns/{NETNS}", "--"]
# The reference of the sandbox ("pause") image among the imported ones.
SANDBOX_IMAGE = "registry.k8s.io/pause:3.10"


def repair_left_over() -> list[str]:
    """Stops what a run killed before its clean-up left running and undoes its host changes."""
    # The namespace's name first: it goes with its last process, and the record's unmounting must not
    # take its mount point away before `ip netns del` does.
    _run("ip", "netns", "del", NETNS, check=False)
    undone = restore_left_over(HOST_RECORD)
    shutil.rmtree(RUNTIME_DIR, ignore_errors=True)
    return undone


def _run(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=check)


def _in_node(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return _run(*NSENTER, *command, check=check)


class ContainerKube(RealKubeProcess):
    """The real control plane and a real node (containerd, kubelet, kube-proxy, CoreDNS) in one network
    namespace; `images_dir` holds scripts/tools/images' archives and their `images.txt`."""

    def __init__(self, data_dir: Path, bin_dir: Path, node_bin_dir: Path, images_dir: Path) -> None:
        super().__init__(data_dir, bin_dir, address=NODE_ADDRESS, command_prefix=NSENTER)
        self.node_bin_dir = node_bin_dir
        self.images_dir = images_dir
        self.host = HostChanges(HOST_RECORD, trees=[str(data_dir), str(RUNTIME_DIR)])
        self.node_name = KUBELET_NODE_NAME
        self.timings: dict[str, float] = {}
        self.undone: list[str] = []
        self._kubelet_args: list[str] = []

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self, timeout: float = 300.0) -> ContainerKube:
        started = time.monotonic()
        for line in repair_left_over():
            print(f"containerkube: repaired what a killed run left: {line}", flush=True)
        self.host.note()
        self._network_up()
        try:
            super().start(timeout)
            self.timings["control plane"] = time.monotonic() - started
            self._start_containerd(started + timeout)
            with ThreadPoolExecutor(max_workers=2) as pool:
                # Importing the images (a minute or more for Ray's) goes on while the node registers.
                imported = pool.submit(self._import_images)
                self._apply_node_objects()
                self._start_node_processes()
                self.wait_node_ready(self.node_name, timeout=max(started + timeout - time.monotonic(), 30))
                self.timings["node ready"] = time.monotonic() - started
                imported.result(timeout=max(started + timeout - time.monotonic(), 1))
            self._wait_dns(started + timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = self.timings["ready"] = time.monotonic() - started
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """The node's processes and every container stopped, then the control plane; the network namespace
        deleted and the host's changes undone."""
        for name in ("kube-proxy", "coredns", "kubelet"):
            stopping.stop(self.processes.pop(name, None), timeout)
        kill_pod_processes()
        kill_processes_naming([str(RUNTIME_DIR)])  # the shims
        stopping.stop(self.processes.pop("containerd", None), timeout)
        super().stop(timeout)
        _run("ip", "netns", "del", NETNS, check=False)
        self.undone = self.host.restore()
        shutil.rmtree(RUNTIME_DIR, ignore_errors=True)

    def restart_kubelet(self, timeout: float = 120.0) -> None:
        """Stops the kubelet (SIGTERM, as its service manager would) and starts it again with the same
        configuration; returns once the Node is Ready again. The containers run on meanwhile."""
        stopping.stop(self.processes.pop("kubelet"), 30)
        self._spawn_node("kubelet", self._kubelet_args)
        self._wait_answering(
            "http://127.0.0.1:10248/healthz", "the kubelet healthy", time.monotonic() + timeout
        )
        self.wait_node_ready(self.node_name, timeout)

    def _network_up(self) -> None:
        _run("ip", "netns", "add", NETNS)
        _run("ip", "link", "add", HOST_LINK, "type", "veth", "peer", "name", NODE_LINK, "netns", NETNS)
        _run("ip", "addr", "add", f"{HOST_ADDRESS}/30", "dev", HOST_LINK)
        _run("ip", "link", "set", HOST_LINK, "up")
        _in_node("ip", "link", "set", "lo", "up")
        _in_node("ip", "addr", "add", f"{NODE_ADDRESS}/30", "dev", NODE_LINK)
        _in_node("ip", "link", "set", NODE_LINK, "up")
        _in_node("ip", "route", "add", "default", "via", HOST_ADDRESS)
        # Per namespace: the node routes between its pods, the veth and its Services, as a node does.
        _in_node("sysctl", "-qw", "net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1")
        for network in (POD_CIDR, SERVICE_CIDR):
            _run("ip", "route", "add", network, "via", NODE_ADDRESS)

    # -- containerd ---------------------------------------------------------------------------------------

    @property
    def containerd_socket(self) -> Path:
        return RUNTIME_DIR / "containerd.sock"

    def _start_containerd(self, deadline: float) -> None:
        RUNTIME_DIR.mkdir(parents=True, exist_ok=True)
        node = self.data_dir / "node"
        (node / "cni").mkdir(parents=True, exist_ok=True)
        (node / "cni" / "10-kuberay.conflist").write_text(json.dumps(self._cni_config(node)))
        config = node / "containerd.toml"
        config.write_text(self._containerd_config(node))
        self._spawn_node("containerd", ["--config", str(config)])

        def serving() -> bool:
            self._check_alive()
            return self._ctr("version", check=False).returncode == 0

        eventually(serving, deadline - time.monotonic(), "containerd serving", every=0.2, blocking=True)

    def _containerd_config(self, node: Path) -> str:
        return f"""version = 3
root = "{node / "containerd"}"
state = "{RUNTIME_DIR / "state"}"
[grpc]
  address = "{self.containerd_socket}"
[ttrpc]
  address = "{self.containerd_socket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{node / "opt"}"
[plugins."io.containerd.nri.v1.nri"]
  disable = true
[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "{SANDBOX_IMAGE}"
[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  BinaryName = "/usr/sbin/runc"
  SystemdCgroup = false
[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = ["/usr/lib/cni"]
  conf_dir = "{node / "cni"}"
"""

    @staticmethod
    def _cni_config(node: Path) -> dict[str, object]:
        bridge = {
            "type": "bridge",
            "bridge": "cni0",
            "isGateway": True,
            "ipMasq": False,
            "hairpinMode": True,
            "ipam": {
                "type": "host-local",
                "ranges": [[{"subnet": POD_CIDR}]],
                "routes": [{"dst": "0.0.0.0/0"}],
                "dataDir": str(node / "cni-ipam"),
            },
        }
        portmap = {"type": "portmap", "capabilities": {"portMappings": True}}
        return {"cniVersion": "1.0.0", "name": "kuberay-pods", "plugins": [bridge, portmap]}

    def _ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        ctr = str(self.node_bin_dir / "ctr")
        return _run(
            ctr, "--address", str(self.containerd_socket), "--namespace", "k8s.io", *args, check=check
        )

    def _import_images(self) -> None:
        started = time.monotonic()
        for line in (self.images_dir / "images.txt").read_text().splitlines():
            archive, *references = line.split()
            if not references:
                continue
            self._ctr("images", "import", "--digests", str(self.images_dir / archive))
            present = set(self._ctr("images", "ls", "-q").stdout.split())
            source = next((ref for ref in references if ref in present), None)
            for reference in references:
                if reference not in present and source is not None:
                    self._ctr("images", "tag", source, reference)
        self.timings["images imported"] = time.monotonic() - started

    # -- kubelet, kube-proxy, CoreDNS -----------------------------------------------------------------

    def _apply_node_objects(self) -> None:
        """CoreDNS's RBAC and the `kube-dns` Service, whose one endpoint is CoreDNS on the node's address."""
        ports = [
            {"name": "dns", "port": 53, "protocol": "UDP"},
            {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
        ]
        labels = {"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}
        self.apply([
            {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "system:coredns"},
                "rules": [
                    {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
                     "verbs": ["list", "watch"]},
                    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "system:coredns"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:coredns"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:coredns"}],
            },
            {
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": labels},
                "spec": {"clusterIP": DNS_ADDRESS, "ports": [{**p, "targetPort": 53} for p in ports]},
            },
            {
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {
                    "name": "kube-dns-node", "namespace": "kube-system",
                    "labels": {"kubernetes.io/service-name": "kube-dns",
                               "endpointslice.kubernetes.io/managed-by": "kuberay-tests"},
                },
                "addressType": "IPv4",
                "endpoints": [{"addresses": [NODE_ADDRESS], "conditions": {"ready": True}}],
                "ports": ports,
            },
        ])  # fmt: skip

    def _start_node_processes(self) -> None:
        node = self.data_dir / "node"
        resolv = node / "resolv.conf"
        # The node's own resolver: none upstream (the namespace has no uplink), so pods see only cluster DNS.
        resolv.write_text("options ndots:5\n")
        kubelet_config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
            "address": NODE_ADDRESS,
            "port": 10250,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": 10248,
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "clusterDNS": [DNS_ADDRESS],
            "clusterDomain": CLUSTER_DOMAIN,
            "resolvConf": str(resolv),
            "failSwapOn": False,
            "serializeImagePulls": False,
            # No eviction or image garbage collection: a test machine's disk is not the cluster's to manage.
            "evictionHard": {"memory.available": "0%", "nodefs.available": "0%", "imagefs.available": "0%"},
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "podLogsDir": str(node / "pod-logs"),
            "cgroupsPerQOS": True,
        }
        (node / "kubelet.yaml").write_text(yaml.safe_dump(kubelet_config))
        self._kubelet_args = [
            f"--config={node / 'kubelet.yaml'}", f"--kubeconfig={self.data_dir / 'kubelet.kubeconfig'}",
            f"--root-dir={node / 'kubelet'}", f"--cert-dir={node / 'kubelet-pki'}",
            f"--hostname-override={self.node_name}", f"--node-ip={NODE_ADDRESS}", "--v=1",
        ]  # fmt: skip
        self._spawn_node("kubelet", self._kubelet_args)
        proxy_config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self.data_dir / "kube-proxy.kubeconfig")},
            "mode": "iptables",
            "clusterCIDR": POD_CIDR,
            "hostnameOverride": self.node_name,
            "healthzBindAddress": "127.0.0.1:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            # Conntrack's table size is the host's (a global sysctl): leave it and its timeouts alone.
            "conntrack": {
                "maxPerCore": 0,
                "min": 0,
                "tcpEstablishedTimeout": "0s",
                "tcpCloseWaitTimeout": "0s",
            },
        }
        (node / "kube-proxy.yaml").write_text(yaml.safe_dump(proxy_config))
        self._spawn_node("kube-proxy", [f"--config={node / 'kube-proxy.yaml'}", "--v=1"])
        corefile = node / "Corefile"
        corefile.write_text(f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {NODE_ADDRESS}
    errors
    ready 127.0.0.1:8181
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {self.data_dir / "coredns.kubeconfig"}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 30
    loadbalance
}}
""")
        self._spawn_node("coredns", ["-conf", str(corefile)])

    def _spawn_node(self, name: str, args: list[str]) -> None:
        # The node's binaries first: containerd finds its shim and kubelet its runtime helpers on the PATH.
        env = {**os.environ, "PATH": f"{self.node_bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin"}
        self._spawn(name, args, binary=self.node_bin_dir / name, env=env)

    def _wait_dns(self, deadline: float) -> None:
        self._wait_answering("http://127.0.0.1:8181/ready", "CoreDNS ready", deadline)

    def _wait_answering(self, url: str, what: str, deadline: float) -> None:
        """Until `url`, in the node's network namespace (where the node's health endpoints listen), says 200."""
        probe = (
            f"import sys, urllib.request; sys.exit(urllib.request.urlopen({url!r}, timeout=2).status != 200)"
        )

        def answers() -> bool:
            self._check_alive()
            return _in_node("python3", "-c", probe, check=False).returncode == 0

        eventually(answers, deadline - time.monotonic(), what, every=0.3, blocking=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="Runs the real control plane and a real node until Ctrl-C.")
    parser.add_argument(
        "--bin", type=Path, required=True, help="the control plane's binaries (scripts/realkube)"
    )
    parser.add_argument(
        "--node-bin", type=Path, required=True, help="the node's binaries (scripts/tools/node)"
    )
    parser.add_argument(
        "--images", type=Path, required=True, help="the image archives (scripts/tools/images)"
    )
    parser.add_argument("--dir", type=Path, help="data directory (default: a new temporary one)")
    args = parser.parse_args()
    data_dir = args.dir or Path(tempfile.mkdtemp(prefix="containerkube-"))
    server = ContainerKube(data_dir, args.bin, args.node_bin, args.images)
    serve_until_interrupted(server, "containerkube")
    for line in server.undone:
        print(f"containerkube: {line}", flush=True)


if __name__ == "__main__":
    main()
