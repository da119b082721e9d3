"""The process kubelet with real processes: probes, restarts, exit codes, environment, logs, deletion, Service
names. Every case runs on the host network (user namespaces for names where the kernel allows them) and,
as root, on a network namespace per pod (on the test bridge lkt0, 10.247.0.0/16)."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from kuberay.local.ports import free_port
from localkube.controllers.api import ControllerApi
from localkube.controllers.cluster import ClusterRunner, cluster_controllers
from localkube.controllers.endpoints import EndpointsController
from localkube.controllers.runner import Runner
from localkube.controllers.scheduler import Scheduler
from localkube.node import exec as exec_in_container
from localkube.node.apiaccess import ApiAccess, Forwarder
from localkube.node.egress import Egress, other_bridges_held
from localkube.node.kubelet import NodeOptions
from localkube.node.logs import read_log
from localkube.node.network import BridgeInUse, HostNetwork, NamespaceNetwork, PodNetwork, bridge_mac
from localkube.node.process import ProcessKubelet, ProcessOptions
from localkube.node.supervision import descendants
from localkube.node.volumes import Token
from localkube.server.registry import Registry, ResourceType
from localkube.server.rest import SYSTEM_NAMESPACES, Resources
from localkube.storage import Store
from support.eventually import eventually
from support.outside_name import outside_name

# Slow: real processes, probes and restarts back-off in real time (~55 s).
# Marked so, it starts early, and its waiting overlaps the files that keep the cores busy.
pytestmark = pytest.mark.slow

ROOT = os.geteuid() == 0 and shutil.which("ip") is not None
NETNS_PREFIX = "lkt-"
# Beside localkube's own bridges (lk0 on 10.246.0.0/16, then downwards) and the containers backend's node
# link (10.249.0.0/30), which a containers test may hold at the same time on another worker.
TEST_BRIDGE, TEST_PODS = "lkt0", ipaddress.IPv4Network("10.247.0.0/16")
PYTHON = "python"  # resolved through the PATH the kubelet gives containers


@dataclass
class Cluster:
    resources: Resources
    kubelet: ProcessKubelet
    data_dir: Path

    @property
    def isolated(self) -> bool:
        return self.kubelet.network.isolated

    @property
    def private_files(self) -> bool:
        """Pods have their own /etc/hosts and /tmp/ray (network or user namespaces)."""
        return self.kubelet.network.resolves_services

    @property
    def store(self) -> Store:
        return self.resources.store

    def _type(self, plural: str) -> ResourceType:
        resource_type = self.resources.registry.by_resource("", plural)
        assert resource_type is not None
        return resource_type

    def create(self, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
        return self.resources.create(self._type(plural), "default", obj, {})

    def delete_pod(self, name: str) -> None:
        self.resources.delete(self._type("pods"), "default", name, {}, {})

    def pod(self, name: str) -> dict[str, Any] | None:
        return self.store.get(f"/registry/core/pods/default/{name}")

    async def until(
        self, name: str, check: Callable[[dict[str, Any]], bool], timeout: float = 60
    ) -> dict[str, Any]:
        found: dict[str, Any] = await eventually(
            lambda: (pod := self.pod(name)) is not None and check(pod) and pod,
            timeout,
            f"pod {name}",
            every=0.05,
        )
        return found

    def log(self, pod: dict[str, Any], container: str = "c", **options: Any) -> str:
        meta = pod["metadata"]
        return read_log(self.data_dir, "default", meta["name"], meta["uid"], container, **options).decode()


@pytest.fixture(params=["netns", "host"] if ROOT else ["host"])
async def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    store = Store(tmp_path / "db")
    resources = Resources(store, Registry())
    resources.seed(SYSTEM_NAMESPACES)
    api = ControllerApi(resources)
    network: PodNetwork = (
        NamespaceNetwork(TEST_BRIDGE, TEST_PODS, NETNS_PREFIX)
        if request.param == "netns"
        else HostNetwork(files=tmp_path / "hosts")
    )
    options = ProcessOptions(tmp_path, backoff_initial=0.2, poll_interval=0.05, shutdown_grace=2)
    kubelet = ProcessKubelet(store, NodeOptions(), options, network)
    kubelet.register(lambda node: api.create("", "nodes", None, node))
    runner = Runner(store, [Scheduler(store), kubelet, EndpointsController(store, api)])
    await runner.start()
    try:
        yield Cluster(resources, kubelet, tmp_path)
    finally:
        await runner.stop()
        await kubelet.shutdown()
        store.close()


def _pod(name: str, *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"terminationGracePeriodSeconds": 2, **spec, "containers": list(containers)},
    }


def _python(code: str, **container: Any) -> dict[str, Any]:
    return {"name": "c", "image": "python", "command": [PYTHON, "-u", "-c", code], **container}


def _phase(phase: str) -> Callable[[dict[str, Any]], bool]:
    return lambda pod: pod.get("status", {}).get("phase") == phase


def _ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", [])
    )


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    statuses: list[dict[str, Any]] = pod.get("status", {}).get("containerStatuses") or [{"state": {}}]
    return statuses[0]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def _command(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")[:-1]
    except FileNotFoundError:
        return []


def _netns() -> list[str]:
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in listing.splitlines() if line.startswith(NETNS_PREFIX)]


def _web(port: int) -> dict[str, Any]:
    return {
        "name": "c",
        "image": "python",
        "command": [PYTHON, "-u", "-m", "http.server", str(port)],
        "ports": [{"name": "http", "containerPort": port}],
        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1},
    }


async def test_http_server_becomes_ready_through_its_probe_and_logs_its_output(cluster: Cluster) -> None:
    port = 8000 if cluster.isolated else free_port()
    cluster.create("pods", _pod("web", _web(port)))
    pod = await cluster.until("web", _ready)
    status = pod["status"]
    assert status["phase"] == "Running"
    assert (
        status["containerStatuses"][0]["ready"] is True and status["containerStatuses"][0]["started"] is True
    )
    async with httpx.AsyncClient(trust_env=False) as client:
        response = await client.get(f"http://{status['podIP']}:{port}/")
    assert response.status_code == 200
    log = cluster.log(pod)
    assert "Serving HTTP on" in log and '"GET / HTTP/1.1" 200' in log
    code = f"import socket, urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{port}/').status, socket.gethostname())"
    container = cluster.kubelet.container_process("default", "web", "c")
    assert container is not None
    inside = await exec_in_container.start(container, [PYTHON, "-c", code], stdin=False, tty=False, size=None)
    output = b""
    while chunk := await inside.readers[1]():
        output += chunk
    await inside.stop()
    hostname = "web" if cluster.private_files else socket.gethostname()  # a UTS namespace of its own
    assert output == f"200 {hostname}\n".encode()
    assert cluster.log(pod, tail_lines=1).count("\n") == 1
    assert cluster.log(pod, timestamps=True).startswith(pod["status"]["startTime"][:4])


async def test_a_failing_exec_liveness_probe_restarts_the_container(cluster: Cluster) -> None:
    liveness = {"exec": {"command": ["false"]}, "periodSeconds": 1, "failureThreshold": 1}
    cluster.create("pods", _pod("sick", _python("import time; time.sleep(60)", livenessProbe=liveness)))
    pod = await cluster.until("sick", lambda p: _container(p).get("restartCount", 0) >= 2)
    last = pod["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (128 + 15, "Error")  # stopped by SIGTERM
    assert pod["status"]["phase"] == "Running"


async def test_a_failing_startup_probe_restarts_the_container_before_other_probes_run(
    cluster: Cluster,
) -> None:
    never = {"exec": {"command": ["false"]}, "periodSeconds": 1, "failureThreshold": 1}
    container = _python(
        "import time; time.sleep(60)", startupProbe=never, readinessProbe={"exec": {"command": ["true"]}}
    )
    cluster.create("pods", _pod("slow", container))
    pod = await cluster.until("slow", lambda p: _container(p).get("restartCount", 0) >= 1)
    status = _container(pod)
    assert status["started"] is False and status["ready"] is False


async def test_an_exit_code_with_restart_policy_never_fails_the_pod(cluster: Cluster) -> None:
    cluster.create(
        "pods", _pod("three", _python("import sys; print('bye'); sys.exit(3)"), restartPolicy="Never")
    )
    pod = await cluster.until("three", _phase("Failed"))
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    assert cluster.log(pod) == "bye\n"


async def test_a_crashing_container_backs_off_and_previous_logs_are_kept(cluster: Cluster) -> None:
    cluster.create("pods", _pod("crash", _python("print('run'); raise SystemExit(1)")))
    pod = await cluster.until("crash", lambda p: _container(p).get("restartCount", 0) >= 2)
    status = pod["status"]["containerStatuses"][0]
    assert status["lastState"]["terminated"]["exitCode"] == 1
    waiting = await cluster.until("crash", lambda p: "waiting" in _container(p)["state"])
    assert waiting["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cluster.log(pod, previous=True) == "run\n"


async def test_environment_expansion_downward_api_and_config_maps_reach_the_process(cluster: Cluster) -> None:
    cluster.create("configmaps", {"metadata": {"name": "settings"}, "data": {"color": "blue"}})
    code = (
        "import os, shutil, sys\n"
        "print(os.environ['GREETING'])\n"
        "print(sys.argv[1], os.environ['MY_POD_IP'], os.environ['MY_NAMESPACE'], os.environ['MY_UID'])\n"
        "print(os.environ['COLOR'], os.environ['CPU'], os.environ['MEMORY_MI'], os.getcwd())\n"
        "print(shutil.which('python'))\n"
    )
    container = _python(
        code,
        args=["$(MY_NAME)"],
        workingDir=str(Path(sys.executable).parent),
        resources={"limits": {"cpu": "1500m", "memory": "64Mi"}},
        env=[
            {"name": "MY_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "MY_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "MY_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
            {"name": "MY_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "GREETING", "value": "hello $(MY_NAME) $$(MY_NAME) $(UNKNOWN)"},
            {"name": "COLOR", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "color"}}},
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {
                "name": "MEMORY_MI",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
            },
        ],
    )
    cluster.create("pods", _pod("env", container, restartPolicy="Never"))
    pod = await cluster.until("env", _phase("Succeeded"))
    meta, status = pod["metadata"], pod["status"]
    assert cluster.log(pod).splitlines() == [
        "hello env $(MY_NAME) $(UNKNOWN)",
        f"env {status['podIP']} default {meta['uid']}",
        f"blue 2 64 {Path(sys.executable).parent}",
        str(Path(sys.executable).parent / "python"),
    ]


async def test_a_missing_config_map_and_a_missing_command_keep_the_container_waiting(
    cluster: Cluster,
) -> None:
    missing = {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k"}}}
    cluster.create("pods", _pod("noconfig", _python("pass", env=[missing])))
    cluster.create("pods", _pod("nocommand", {"name": "c", "image": "busybox"}))
    for name, reason, message in [
        ("noconfig", "CreateContainerConfigError", 'configmap "absent" not found'),
        ("nocommand", "RunContainerError", "neither command nor args"),
    ]:
        pod = await cluster.until(
            name,
            lambda p: (
                _container(p)["state"].get("waiting", {}).get("reason", "ContainerCreating")
                != "ContainerCreating"
            ),
        )
        assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == reason
        assert message in pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
        assert pod["status"]["phase"] == "Pending"


async def test_init_containers_run_first_in_order_and_share_the_pods_ray_dir(cluster: Cluster) -> None:
    Path("/tmp/ray").mkdir(exist_ok=True)
    trace = f"/tmp/ray/localkube-test-{uuid.uuid4().hex}"  # the pod's own /tmp/ray in a network namespace
    step = f"open({trace!r}, 'a').write('{{}}\\n')"
    pod = _pod("init", _python(f"print(open({trace!r}).read(), end='')"), restartPolicy="OnFailure")
    pod["spec"]["initContainers"] = [
        _python(step.format("one"), name="one"),
        _python(step.format("two"), name="two"),
    ]
    cluster.create("pods", pod)
    try:
        done = await cluster.until("init", _phase("Succeeded"))
    finally:
        host_file = Path(trace)
        on_host = host_file.exists()
        host_file.unlink(missing_ok=True)
    assert cluster.log(done) == "one\ntwo\n"
    assert on_host is not cluster.private_files
    assert [s["state"]["terminated"]["reason"] for s in done["status"]["initContainerStatuses"]] == [
        "Completed"
    ] * 2


async def test_deleting_a_pod_leaves_no_process_behind(cluster: Cluster) -> None:
    code = (
        "import os, signal, subprocess, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"  # only SIGKILL at the end of the grace period stops it
        "child = subprocess.Popen(['sleep', '300'])\n"
        "escaped = subprocess.Popen(['sleep', '301'], start_new_session=True)\n"
        "print(os.getpid(), child.pid, escaped.pid)\n"
        "time.sleep(300)\n"
    )
    cluster.create("pods", _pod("doomed", _python(code)))
    pod = await cluster.until("doomed", lambda p: bool(_container(p)["state"].get("running")))
    await eventually(lambda: cluster.log(pod).split(), 10, "the container's output", every=0.05)
    # The pids the container prints are its PID namespace's (where it has one): the host's are found from
    # the process the kubelet started.
    leader = int(_container(pod)["containerID"].removeprefix("process://"))
    pids = [leader, *descendants(leader)]
    assert sum(_command(pid)[:1] == ["sleep"] for pid in pids) == 2
    netns_before = _netns() if cluster.isolated else []
    assert all(_alive(pid) for pid in pids) and len(netns_before) == (1 if cluster.isolated else 0)
    cluster.delete_pod("doomed")
    await eventually(lambda: cluster.pod("doomed") is None, 15, "pod doomed gone", every=0.05)
    assert not any(_alive(pid) for pid in pids)
    with pytest.raises(ProcessLookupError):
        os.killpg(pids[0], 0)
    assert not (cluster.data_dir / "pods" / f"default_doomed_{pod['metadata']['uid']}").exists()
    if cluster.isolated:
        assert _netns() == [] and not Path("/etc/netns", netns_before[0]).exists()


async def test_two_pods_bind_the_same_port_on_their_own_addresses(cluster: Cluster) -> None:
    if not cluster.isolated:
        pytest.skip("pods share the host's ports without network namespaces (root)")
    cluster.create("pods", _pod("a", _web(8000)))
    cluster.create(
        "pods", _pod("b", {**_web(8000), "readinessProbe": {"tcpSocket": {"port": 8000}, "periodSeconds": 1}})
    )
    addresses = [(await cluster.until(name, _ready))["status"]["podIP"] for name in ("a", "b")]
    assert len(set(addresses)) == 2
    async with httpx.AsyncClient(trust_env=False) as client:
        for address in addresses:
            assert (await client.get(f"http://{address}:8000/")).status_code == 200


async def test_the_bridges_mac_stays_as_pods_come_and_go(cluster: Cluster) -> None:
    """A bridge without a MAC of its own takes its lowest port's, so deleting a pod could change the node's
    MAC under the ARP caches of the other pods (Ray's autoscaler then hung dialling the API server)."""
    if not cluster.isolated:
        pytest.skip("bridges exist only with network namespaces (root)")
    address = Path(f"/sys/class/net/{TEST_BRIDGE}/address")
    sleeper = _python("import time; time.sleep(300)")
    cluster.create("pods", _pod("first", sleeper))
    await cluster.until("first", _phase("Running"))
    assert address.read_text().strip() == bridge_mac(TEST_BRIDGE)
    for name in ("second", "third"):
        cluster.create("pods", _pod(name, sleeper))
        await cluster.until(name, _phase("Running"))
    cluster.delete_pod("second")
    await eventually(lambda: cluster.pod("second") is None, 30, "pod second gone", every=0.1)
    assert address.read_text().strip() == bridge_mac(TEST_BRIDGE)


async def test_service_names_resolve_inside_pods(cluster: Cluster) -> None:
    if not cluster.private_files:
        pytest.skip("Service names resolve only with network or user namespaces")
    # On the host's network a fixed port may be another test's (Ray Serve listens on 8000).
    port = 8000 if cluster.isolated else free_port()
    cluster.create("pods", _pod("head", _web(port)))
    service = {
        "metadata": {"name": "head-svc"},
        "spec": {"selector": {"app": "head"}, "ports": [{"port": port}]},
    }
    cluster.create("services", service)
    head = await cluster.until("head", _ready)
    code = (
        "import socket, time, urllib.request\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        names = [socket.gethostbyname(n) for n in ('head-svc', 'head-svc.default', 'head-svc.default.svc.cluster.local')]\n"
        "        break\n"
        "    except OSError:\n"
        "        time.sleep(0.1)\n"
        "print(*names)\n"
        f"print(urllib.request.urlopen('http://head-svc:{port}/').status)\n"
    )
    cluster.create("pods", _pod("client", _python(code), restartPolicy="Never"))
    client = await cluster.until("client", lambda p: p["status"]["phase"] in ("Succeeded", "Failed"))
    ip = head["status"]["podIP"]
    assert cluster.log(client) == f"{ip} {ip} {ip}\n200\n"


async def test_pods_resolve_names_outside_the_cluster_and_still_its_services(cluster: Cluster) -> None:
    if not cluster.private_files:
        pytest.skip("Service names resolve only with network or user namespaces")
    outside = outside_name()
    cluster.create("pods", _pod("backend", _python("import time; time.sleep(60)")))
    service = {
        "metadata": {"name": "backend-svc"},
        "spec": {"selector": {"app": "backend"}, "ports": [{"port": 80}]},
    }
    cluster.create("services", service)
    backend = await cluster.until("backend", _ready)
    code = (
        "import socket, time\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        service = socket.gethostbyname('backend-svc.default.svc.cluster.local')\n"
        "        break\n"
        "    except OSError:\n"
        "        time.sleep(0.1)\n"
        f"print(service, socket.gethostbyname({outside!r}))\n"
    )
    cluster.create("pods", _pod("resolver", _python(code), restartPolicy="Never"))
    done = await cluster.until("resolver", lambda p: p["status"]["phase"] in ("Succeeded", "Failed"))
    service_ip, outside_ip = cluster.log(done).split()
    assert service_ip == backend["status"]["podIP"]
    ipaddress.IPv4Address(outside_ip)  # an address, whichever of the name's the answer held


def _connects(host: str, port: int) -> str:
    """`ok`, or why a TCP connection to the host's port failed (from wherever this runs)."""
    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError as error:
        return repr(error)
    return "ok"


async def test_pods_reach_what_the_machine_reaches(cluster: Cluster) -> None:
    """A Ray job's pip install needs the package index: a pod connects to it as the machine does."""
    if not cluster.isolated:
        pytest.skip("pods on the host's network are the host")
    outside = outside_name()
    if _connects(outside, 443) != "ok":
        pytest.skip(f"this machine itself does not reach {outside}:443")
    code = (
        f"import socket\ntry:\n    socket.create_connection(({outside!r}, 443), timeout=10).close()\n"
        "    print('ok')\nexcept OSError as error:\n    print(repr(error))\n"
    )
    cluster.create("pods", _pod("egress", _python(code), restartPolicy="Never"))
    done = await cluster.until("egress", lambda p: p["status"]["phase"] in ("Succeeded", "Failed"))
    assert cluster.log(done).strip() == "ok"


async def test_a_closed_bridge_leaves_no_rule_and_the_last_puts_forwarding_back(tmp_path: Path) -> None:
    if not ROOT or shutil.which("iptables") is None:
        pytest.skip("bridges and their NAT exist only as root, with iptables")
    lock_dir = tmp_path / "locks"  # no other localkube's bridge: this one is the last to close
    lock_dir.mkdir()
    ip_forward = tmp_path / "ip_forward"  # the host's own value is another worker's business meanwhile
    ip_forward.write_text("0\n")
    egress = Egress("lkt9", ipaddress.IPv4Network("10.250.0.0/16"), lock_dir, ip_forward)

    def tagged() -> list[str]:
        rules = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
        return [line for line in rules.splitlines() if "localkube lkt9" in line]

    await egress.open()
    try:
        assert len(tagged()) == 3 and ip_forward.read_text() == "1\n"
        await Egress("lkt9", ipaddress.IPv4Network("10.250.0.0/16"), lock_dir, ip_forward).open()
        assert len(tagged()) == 3, "a second open (a restart after a kill) replaces the rules, not adds"
    finally:
        await egress.close(others_held=other_bridges_held(lock_dir, "lkt9"))
    assert tagged() == []
    assert ip_forward.read_text() == "0\n" and not (lock_dir / "ip_forward.before").exists()


async def test_the_cluster_dns_answers_the_cluster_domain_itself(cluster: Cluster) -> None:
    """Queries a tool like `dig` sends: to the nameserver of the pod's resolv.conf, past its hosts file."""
    if not cluster.isolated:
        pytest.skip("pods on the host's network use the host's resolvers")
    cluster.create(
        "pods", _pod("db", _python("import time; time.sleep(60)"), hostname="db-0", subdomain="db")
    )
    cluster.create(
        "services",
        {
            "metadata": {"name": "db"},
            "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]},
        },
    )
    db = await cluster.until("db", _ready)
    code = (
        "import dns.message, dns.query, dns.rcode, time\n"
        "server = [l.split()[1] for l in open('/etc/resolv.conf') if l.startswith('nameserver')][0]\n"
        "def ask(name):\n"
        "    reply = dns.query.udp(dns.message.make_query(name, 'A'), server, timeout=5)\n"
        "    return dns.rcode.to_text(reply.rcode()), [r.address for rrset in reply.answer for r in rrset]\n"
        "for _ in range(100):\n"
        "    if ask('db-0.db.default.svc.cluster.local')[1]:\n"
        "        break\n"
        "    time.sleep(0.1)\n"
        "print(ask('db-0.db.default.svc.cluster.local'), ask('db.default.svc.cluster.local'))\n"
        "print(ask('10-1-2-3.default.pod.cluster.local'), ask('nothing.default.svc.cluster.local'))\n"
        "print(open('/etc/resolv.conf').read().split('\\n')[0])\n"
    )  # the search list: the pod's namespace first, then any of the host's
    cluster.create("pods", _pod("asker", _python(code), restartPolicy="Never"))
    done = await cluster.until("asker", lambda p: p["status"]["phase"] in ("Succeeded", "Failed"))
    ip = db["status"]["podIP"]
    log = cluster.log(done).splitlines()
    assert log[:2] == [
        f"('NOERROR', ['{ip}']) ('NOERROR', ['{ip}'])",
        "('NOERROR', ['10.1.2.3']) ('NXDOMAIN', [])",
    ]
    assert log[2].startswith("search default.svc.cluster.local svc.cluster.local cluster.local")


async def test_a_new_kubelet_stops_the_processes_an_unclean_predecessor_left(cluster: Cluster) -> None:
    cluster.create("pods", _pod("orphan", _python("import time; time.sleep(60)")))
    pod = await cluster.until("orphan", lambda p: bool(_container(p)["state"].get("running")))
    pid = int(_container(pod)["containerID"].removeprefix("process://"))
    assert _alive(pid)
    ProcessKubelet(cluster.store, NodeOptions(), ProcessOptions(cluster.data_dir), HostNetwork())
    await eventually(lambda: not _alive(pid), 5, "the process gone", every=0.05)


async def test_a_bridge_belongs_to_one_localkube_at_a_time(cluster: Cluster) -> None:
    if not cluster.isolated:
        pytest.skip("bridges exist only with network namespaces (root)")
    with pytest.raises(BridgeInUse, match="bridge lkt0 is used by another localkube"):
        NamespaceNetwork(TEST_BRIDGE, TEST_PODS, NETNS_PREFIX)


async def test_shutdown_caps_the_grace_of_a_pod_being_deleted_and_the_next_start_removes_it(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "db")
    resources = Resources(store, Registry())
    resources.seed(SYSTEM_NAMESPACES)
    options = ProcessOptions(tmp_path, backoff_initial=0.2, poll_interval=0.05, shutdown_grace=2)
    kubelet = ProcessKubelet(store, NodeOptions(), options, HostNetwork(files=tmp_path / "hosts"))
    kubelet.register(lambda node: ControllerApi(resources).create("", "nodes", None, node))
    runner = ClusterRunner(store, [Scheduler(store), kubelet], kubelet)
    await runner.start()
    try:
        cluster = Cluster(resources, kubelet, tmp_path)
        stubborn = (
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('on'); time.sleep(300)"
        )
        cluster.create("pods", _pod("slow", _python(stubborn), terminationGracePeriodSeconds=60))
        pod = await cluster.until("slow", lambda p: bool(_container(p)["state"].get("running")))
        # Once it has printed, it ignores SIGTERM.
        await eventually(lambda: cluster.log(pod), 10, "the container's output", every=0.05)
        leader = int(_container(pod)["containerID"].removeprefix("process://"))
        cluster.delete_pod("slow")  # its stop begins, with the pod's own 60 s
        await asyncio.sleep(0.5)
        assert cluster.pod("slow") is not None and _alive(leader)
        started = time.monotonic()
        await runner.stop()  # shutdown_grace is 2 s: the run is SIGKILLed then, not 60 s after its deletion
        assert time.monotonic() - started < 8
        assert not _alive(leader)
        # The next start finishes the deletion the shutdown cut short, files included.
        files = [
            tmp_path / "pods" / f"default_slow_{pod['metadata']['uid']}",
            tmp_path / "kubelet" / "pods" / pod["metadata"]["uid"],
        ]
        assert cluster.pod("slow") is not None and all(path.exists() for path in files)
        kubelet = ProcessKubelet(store, NodeOptions(), options, HostNetwork(files=tmp_path / "hosts"))
        runner = ClusterRunner(store, [kubelet], kubelet)
        await runner.start()
        await eventually(lambda: cluster.pod("slow") is None, 10, "pod slow gone", every=0.05)
        assert not any(path.exists() for path in files)
    finally:
        await runner.stop()
        store.close()


async def test_cluster_controllers_in_process_mode_stop_their_processes(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    resources = Resources(store, Registry())
    resources.seed(SYSTEM_NAMESPACES)
    runner = cluster_controllers(resources, NodeOptions(), node_mode="process", data_dir=tmp_path)
    await runner.start()
    try:
        cluster = Cluster(
            resources, cast(ClusterRunner, runner).kubelet or pytest.fail("no process kubelet"), tmp_path
        )
        cluster.create("pods", _pod("p", _python("import time; time.sleep(60)")))
        pod = await cluster.until("p", lambda p: bool(_container(p)["state"].get("running")))
        pid = int(_container(pod)["containerID"].removeprefix("process://"))
    finally:
        await runner.stop()
        store.close()
    assert not _alive(pid)
    with pytest.raises(ValueError, match="node_mode 'process' needs a data directory"):
        cluster_controllers(resources, NodeOptions(), node_mode="process")


async def test_a_host_network_pod_runs_on_the_nodes_network(cluster: Cluster) -> None:
    netns_before = _netns() if cluster.isolated else []
    code = "import socket; print(socket.gethostbyname('localhost'))"
    cluster.create("pods", _pod("onhost", _python(code), restartPolicy="Never", hostNetwork=True))
    pod = await cluster.until("onhost", _phase("Succeeded"))
    assert pod["status"]["podIP"] == pod["status"]["hostIP"]
    assert cluster.log(pod) == "127.0.0.1\n"
    assert (_netns() if cluster.isolated else []) == netns_before


async def test_login_shells_keep_localkubes_interpreter_first_on_path(cluster: Cluster) -> None:
    shell = {
        "name": "c",
        "image": "x",
        "command": ["/bin/bash", "-lc", "--", "command -v python; echo $HOME"],
    }
    cluster.create("pods", _pod("login", shell, restartPolicy="Never"))
    pod = await cluster.until("login", _phase("Succeeded"))
    python, home = cluster.log(pod).splitlines()
    assert python == str(Path(sys.executable).parent / "python")
    assert Path(home).is_relative_to(cluster.data_dir)


async def test_on_the_host_network_probes_also_reach_servers_bound_to_loopback_only(cluster: Cluster) -> None:
    if cluster.isolated:
        pytest.skip("a pod with its own network namespace is probed at its own address only")
    port = free_port()
    web = _web(port)
    web["command"] = [*web["command"], "--bind", "127.0.0.1"]
    cluster.create("pods", _pod("local", web))
    await cluster.until("local", _ready)


def _hooks_volume(directory: Path) -> dict[str, Any]:
    return {"volumes": [{"name": "hooks", "hostPath": {"path": str(directory), "type": "DirectoryOrCreate"}}]}


_HOOKS_MOUNT = {"volumeMounts": [{"name": "hooks", "mountPath": "/var/hooks"}]}


async def test_a_pre_stop_hook_runs_in_its_own_container_and_stops_only_its_processes(
    cluster: Cluster, tmp_path: Path
) -> None:
    if not cluster.private_files:
        pytest.skip("containers have PID namespaces only with network or user namespaces")
    hooks = tmp_path / "hooks"
    sleeper = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
    # `lk-mar[k]er` matches the sleepers' command lines but not the hook's own shell.
    pre_stop = "echo stopped > /var/hooks/prestop; pkill -KILL -f 'lk-mar[k]er'"
    lifecycle = {"preStop": {"exec": {"command": ["sh", "-c", pre_stop]}}}
    hooked = {**_python(sleeper, args=["lk-marker"], lifecycle=lifecycle), **_HOOKS_MOUNT}
    cluster.create("pods", _pod("hooked", hooked, **_hooks_volume(hooks), terminationGracePeriodSeconds=30))
    cluster.create("pods", _pod("bystander", _python(sleeper, args=["lk-marker"])))
    pids = {}
    for name in ("hooked", "bystander"):
        pod = await cluster.until(name, lambda p: _container(p).get("started") is True)
        pids[name] = int(_container(pod)["containerID"].removeprefix("process://"))
    cluster.delete_pod("hooked")
    await eventually(lambda: cluster.pod("hooked") is None, 20, "pod hooked gone", every=0.05)
    assert (hooks / "prestop").read_text() == "stopped\n"
    assert not _alive(pids["hooked"])
    assert _alive(pids["bystander"]) and all(_alive(pid) for pid in descendants(pids["bystander"]))


async def test_post_start_and_http_pre_stop_hooks_run(cluster: Cluster, tmp_path: Path) -> None:
    port = 8000 if cluster.isolated else free_port()
    # A server that notes every path it is asked for in a file of the test's directory (which the
    # container sees at the same path: a mount namespace only adds mounts).
    server = (
        "import http.server, sys\n"
        "class Handler(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        open(sys.argv[2], 'a').write(self.path + '\\n')\n"
        "        self.send_response(200)\n"
        "        self.end_headers()\n"
        "http.server.HTTPServer(('', int(sys.argv[1])), Handler).serve_forever()\n"
    )
    requests, started = tmp_path / "requests", tmp_path / "poststart"
    lifecycle = {
        "postStart": {"exec": {"command": ["sh", "-c", f"echo $HOSTNAME > {started}"]}},
        "preStop": {"httpGet": {"path": "/prestop", "port": "http"}},
    }
    web = {
        **_python(server, args=[str(port), str(requests)]),
        "ports": [{"name": "http", "containerPort": port}],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 1},
        "lifecycle": lifecycle,
    }
    cluster.create("pods", _pod("web", web))
    pod = await cluster.until("web", _ready)
    assert _container(pod)["started"] is True
    assert started.read_text() == "web\n"
    cluster.delete_pod("web")
    await eventually(lambda: cluster.pod("web") is None, 20, "pod web gone", every=0.05)
    assert requests.read_text().splitlines()[-1] == "/prestop"


async def test_a_missing_config_map_volume_keeps_the_pod_creating_until_it_appears(cluster: Cluster) -> None:
    if not cluster.private_files:
        pytest.skip("volumes are mounted only with network or user namespaces")
    reader = "import time; print(open('/etc/app/greeting').read(), flush=True); time.sleep(300)"
    container = {**_python(reader), "volumeMounts": [{"name": "app", "mountPath": "/etc/app"}]}
    cluster.create(
        "pods", _pod("reader", container, volumes=[{"name": "app", "configMap": {"name": "late"}}])
    )

    def failed_mount(pod: dict[str, Any]) -> bool:
        events = cluster.store.list("/registry/core/events/default/")[0]
        return any(e["reason"] == "FailedMount" and e["involvedObject"]["name"] == "reader" for e in events)

    pod = await cluster.until("reader", failed_mount)
    events = cluster.store.list("/registry/core/events/default/")[0]
    messages = [e["message"] for e in events if e["reason"] == "FailedMount"]
    assert messages == ['MountVolume.SetUp failed for volume "app" : configmap "late" not found']
    assert pod["status"]["phase"] == "Pending"
    assert _container(pod)["state"] == {"waiting": {"reason": "ContainerCreating"}}
    cluster.create("configmaps", {"metadata": {"name": "late"}, "data": {"greeting": "at last"}})
    pod = await cluster.until("reader", lambda p: bool(_container(p)["state"].get("running")))
    await eventually(lambda: cluster.log(pod) == "at last\n", 15, "the container's output", every=0.1)


async def test_volume_mounts_are_refused_where_the_node_has_no_mount_namespaces(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    resources = Resources(store, Registry())
    resources.seed(SYSTEM_NAMESPACES)
    options = ProcessOptions(tmp_path, backoff_initial=0.2, poll_interval=0.05, shutdown_grace=2)
    kubelet = ProcessKubelet(store, NodeOptions(), options, HostNetwork())  # no user namespaces asked for
    kubelet.register(lambda node: ControllerApi(resources).create("", "nodes", None, node))
    runner = Runner(store, [Scheduler(store), kubelet])
    await runner.start()
    try:
        cluster = Cluster(resources, kubelet, tmp_path)
        container = {
            **_python("print('never')"),
            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
        }
        cluster.create("pods", _pod("mounts", container, volumes=[{"name": "scratch", "emptyDir": {}}]))
        pod = await cluster.until(
            "mounts", lambda p: bool(_container(p)["state"].get("waiting", {}).get("message"))
        )
        waiting = _container(pod)["state"]["waiting"]
        assert waiting["reason"] == "CreateContainerConfigError"
        assert "volumeMounts need a mount namespace" in waiting["message"]
    finally:
        await runner.stop()
        await kubelet.shutdown()
        store.close()


async def test_the_api_forwarder_takes_another_port_when_443_is_taken() -> None:
    if os.geteuid() != 0:
        pytest.skip("binding port 443 needs root")

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"api:" + await reader.readline())
        await writer.drain()
        writer.close()

    api = await asyncio.start_server(echo, "127.0.0.1", 0)
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.3", 443))  # something of the host's on the port a forwarder would take
    holder.listen()
    port = api.sockets[0].getsockname()[1]
    forwarder = Forwarder(ApiAccess("127.0.0.1", port, b"", lambda *_: Token("", 0)), "127.0.0.3")
    try:
        assert forwarder.address[1] not in (443, 0)
        await forwarder.start()
        reader, writer = await asyncio.open_connection(*forwarder.address)
        writer.write(b"hello\n")
        assert await reader.read() == b"api:hello\n"
        writer.close()
    finally:
        await forwarder.close()
        holder.close()
        api.close()
        await api.wait_closed()
