"""The operator's RBAC in deploy/rbac is the least it needs.

One localkube logs every request with its user (debug level). The real `kuberay-operator`, as deploy/rbac's
ServiceAccount bound to deploy/rbac's ClusterRole and leader-election Role, with leader election on, runs a
scenario that exercises the rules: a RayCluster with the autoscaler (its ServiceAccount, Role and
RoleBinding) and the dashboard Ingress, a RayJob in K8sJobMode (its submitter Job), a RayService (its
RayCluster), each then deleted. The (verb, resource) pairs it used are read from localkube's log and
compared with the pairs the roles grant:

- every pair used is granted (no 403 happened);
- every pair granted is used, or is a known allowance: one upstream's v1.5.0 roles grant too, or one a
  feature this scenario does not turn on needs (FEATURES says which, and where it is tested); the test prints
  them. A grant neither used nor allowed fails the test: remove it from deploy/rbac (or exercise it here);
- removing a sample of the used pairs breaks the operator: with each removed in turn (operators in
  parallel, each with its own reduced role and namespace), its log shows that very 403.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.eventually import eventually
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess
from support.runreport import report

REPO = Path(__file__).resolve().parents[2]
RBAC = REPO / "deploy" / "rbac"
EXAMPLES = REPO / "examples"
Pair = tuple[str, str, str]  # (API group, resource[/subresource], verb)

ALL = ("get", "list", "watch", "create", "update", "patch", "delete")
# Upstream's v1.5.0 roles (ray-operator/config/rbac/role.yaml and leader_election_role.yaml), as facts:
# a grant of ours that upstream has too may stay unused here (upstream's operator, and users' tooling
# built on its role, may rely on it).
UPSTREAM: set[Pair] = {
    (group, resource, verb)
    for groups, resources, verbs in [
        ([""], ["endpoints", "ingressclasses"], ("get", "list", "watch")),
        ([""], ["events", "pods/status", "services"], ALL),
        ([""], ["pods"], (*ALL, "deletecollection")),
        ([""], ["pods/proxy", "services/status"], ("get", "patch", "update")),
        ([""], ["pods/resize"], ("patch",)),
        ([""], ["serviceaccounts"], ("create", "delete", "get", "list", "watch")),
        ([""], ["services/proxy"], ("create", "get", "patch", "update")),
        ([""], ["configmaps"], ALL),
        (["batch"], ["jobs"], ALL),
        (["coordination.k8s.io"], ["leases"], ("create", "get", "list", "update")),
        (["extensions", "networking.k8s.io"], ["ingresses"], ALL),
        (
            ["gateway.networking.k8s.io"],
            ["gateways", "httproutes"],
            ("create", "get", "list", "update", "watch"),
        ),
        (["ray.io"], ["rayclusters", "rayjobs", "rayservices"], ALL),
        (["ray.io"], ["rayclusters/finalizers", "rayjobs/finalizers", "rayservices/finalizers"], ("update",)),
        (
            ["ray.io"],
            ["rayclusters/status", "rayjobs/status", "rayservices/status"],
            ("get", "patch", "update"),
        ),
        (["rbac.authorization.k8s.io"], ["rolebindings"], ("create", "delete", "get", "list", "watch")),
        (["rbac.authorization.k8s.io"], ["roles"], ("create", "delete", "get", "list", "update", "watch")),
        (["route.openshift.io"], ["routes"], ALL),
    ]
    for group in groups
    for resource in resources
    for verb in verbs
}
# Grants of ours upstream lacks that this scenario does not use: the feature that needs each, and where.
FEATURES: dict[Pair, str] = {
    (group, resource, verb): reason
    for group, resources, verbs, reason in [
        ("", ["persistentvolumeclaims"], ("create", "get", "update"), "GCS fault tolerance with embedded storage (alpha gate): tests/integration/raycluster"),
        ("", ["nodes"], ("get",), "Node Label Delivery's pods/binding webhook (ENABLE_WEBHOOKS): tests/integration/raycluster/test_node_label_delivery.py"),
        ("", ["secrets"], ("create", "get"), "spec.authOptions token auth: tests/integration/raycluster"),
        ("", ["secrets"], ("update",), "gate RayClusterMTLS with cert-manager: tests/integration/raycluster/test_mtls.py"),
        ("cert-manager.io", ["issuers"], ("get", "watch", "create"), "gate RayClusterMTLS with cert-manager: tests/integration/raycluster/test_mtls.py"),
        ("cert-manager.io", ["certificates"], ("get", "watch", "create", "update"), "gate RayClusterMTLS with cert-manager: tests/integration/raycluster/test_mtls.py"),
        ("events.k8s.io", ["events"], ("patch",), "a repeated Event's series (RayJob, RayService controllers)"),
        ("gateway.networking.k8s.io", ["gateways", "httproutes"], ("delete",), "RayService incremental upgrade, suspended: tests/integration/rayservice/test_incremental_upgrade.py"),
        ("networking.k8s.io", ["networkpolicies"], ("create", "delete", "get", "update"), "gate RayClusterNetworkPolicy with spec.networkPolicy: tests/integration/raycluster"),
        ("ray.io", ["raycronjobs"], ("get", "create", "update", "patch", "delete"), "gate RayCronJob (listed and watched without it, to warn): tests/integration/raycronjob"),
        ("ray.io", ["raycronjobs/status"], ("get", "patch", "update"), "gate RayCronJob"),
        ("ray.io", ["raycronjobs/finalizers"], ("update",), "gate RayCronJob: blockOwnerDeletion on its RayJobs (a real API server checks it; localkube does not)"),
        ("scheduling.volcano.sh", ["podgroups"], ALL[:5] + ("delete",), "--batch-scheduler=volcano: tests/integration/schedulers/test_rbac.py"),
        ("scheduling.x-k8s.io", ["podgroups"], ("get", "list", "watch", "create"), "--batch-scheduler=scheduler-plugins: tests/integration/schedulers"),
        ("scheduling.k8s.io", ["workloads", "podgroups"], ALL[:5] + ("delete",), "gate KubernetesWAS: tests/integration/schedulers"),
    ]
    for resource in resources
    for verb in verbs
}  # fmt: skip
# Removed in turn, each must then show its 403 in the operator's log: the first requests of a RayCluster,
# one per path (an informer, a child object, the status, the autoscaler's RBAC, the Ingress). Each costs an
# operator process: five keep the test near 20 s.
REMOVALS: list[Pair] = [
    ("ray.io", "rayclusters", "watch"),
    ("", "pods", "create"),
    ("ray.io", "rayclusters/status", "update"),
    ("", "serviceaccounts", "create"),
    ("networking.k8s.io", "ingresses", "create"),
]
_REQUEST = re.compile(r" localkube\.server (GET|POST|PUT|PATCH|DELETE) (\S+) \d{3} \S+ user=(\S+)$")


def request_pair(method: str, target: str) -> Pair:
    """The RBAC (group, resource, verb) of one logged request, as the API server derives it."""
    path, _, query = target.partition("?")
    segments = [s for s in path.split("/") if s]
    group, rest = ("", segments[2:]) if segments[0] == "api" else (segments[1], segments[3:])
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    named = len(rest) > 1
    if method == "GET":
        verb = "get" if named else ("watch" if re.search(r"(^|&)watch=(1|true)", query) else "list")
    elif method == "DELETE":
        verb = "delete" if named else "deletecollection"
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}[method]
    return group, resource, verb


def granted(*roles: dict[str, Any]) -> set[Pair]:
    return {
        (group, resource, verb)
        for role in roles
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def without(role: dict[str, Any], pair: Pair) -> dict[str, Any]:
    """The role with one (group, resource, verb) taken out of every rule that grants it."""
    group, resource, verb = pair
    rules = []
    for rule in role["rules"]:
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                verbs = [v for v in rule["verbs"] if (g, r, v) != pair]
                if verbs:
                    rules.append({"apiGroups": [g], "resources": [r], "verbs": verbs})
    assert granted({"rules": rules}) == granted(role) - {(group, resource, verb)}
    return {**role, "rules": rules}


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((RBAC / name).read_text())
    return loaded


def install(server: LocalKubeProcess, namespace: str, role: dict[str, Any], target: Path) -> Path:
    """deploy/rbac's ServiceAccount in `namespace`, bound to `role` (made cluster-unique) and to the
    leader-election Role there; a kubeconfig at `target` that authenticates as it."""
    account, binding = load("service_account.yaml"), load("role_binding.yaml")
    election, election_binding = load("leader_election_role.yaml"), load("leader_election_role_binding.yaml")
    account["metadata"]["namespace"] = namespace
    role = copy.deepcopy(role)
    role["metadata"]["name"] = binding["metadata"]["name"] = binding["roleRef"]["name"] = (
        f"kuberay-{namespace}"
    )
    binding["subjects"][0]["namespace"] = election_binding["subjects"][0]["namespace"] = namespace
    election["metadata"]["namespace"] = election_binding["metadata"]["namespace"] = namespace
    server.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}])
    server.apply([account, role, binding, election, election_binding])
    return server.service_account_kubeconfig(namespace, account["metadata"]["name"], target)


def example(name: str, namespace: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    obj["metadata"]["namespace"] = namespace
    return obj


def scenario(namespace: str) -> list[dict[str, Any]]:
    cluster = example("ray-cluster.autoscaler.yaml", namespace)
    cluster["spec"]["headGroupSpec"]["enableIngress"] = True
    return [cluster, example("ray-job.k8s-job-mode.yaml", namespace), example("ray-service.yaml", namespace)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKubeProcess]:
    """A localkube of this module's own: it logs every request (debug), which the shared one does not."""
    process = LocalKubeProcess(tmp_path_factory.mktemp("localkube-rbac"), extra_args=["--log-level", "debug"])
    process.start()
    try:
        process.apply_files(sorted((REPO / "deploy" / "crds").glob("*.yaml")))
        yield process
    finally:
        process.stop()


def test_the_operator_uses_every_rule_it_is_granted(server: LocalKubeProcess, tmp_path: Path) -> None:
    role, election = load("role.yaml"), load("leader_election_role.yaml")
    home, work = "rbac-operator", "rbac-work"
    kubeconfig = install(server, home, role, tmp_path / "kubeconfig")
    server.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": work}}])
    log = tmp_path / "operator.log"
    operator = OperatorProcess(
        kubeconfig, log, "--enable-leader-election=true", f"--leader-election-namespace={home}"
    ).start()
    objects = scenario(work)
    try:
        with server.client(timeout=30) as api:
            base = f"/apis/ray.io/v1/namespaces/{work}"
            plurals = {"RayCluster": "rayclusters", "RayJob": "rayjobs", "RayService": "rayservices"}
            for obj in objects:
                api.post(f"{base}/{plurals[obj['kind']]}", json=obj).raise_for_status()

            def settled() -> bool:
                jobs = api.get(f"/apis/batch/v1/namespaces/{work}/jobs").json()["items"]
                clusters = api.get(f"{base}/rayclusters").json()["items"]
                ingresses = api.get(f"/apis/networking.k8s.io/v1/namespaces/{work}/ingresses").json()["items"]
                roles = api.get(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{work}/rolebindings").json()["items"]  # fmt: skip
                # The RayJob's and the RayService's clusters besides ours; the autoscaler's RBAC, the Ingress.
                return bool(jobs) and len(clusters) >= 3 and bool(ingresses) and bool(roles)

            eventually(settled, 120, "the scenario's objects", every=0.5)
            for obj in objects:
                api.delete(f"{base}/{plurals[obj['kind']]}/{obj['metadata']['name']}").raise_for_status()
            eventually(
                lambda: not api.get(f"{base}/rayclusters").json()["items"],
                120,
                "the clusters deleted",
                every=0.5,
            )
    finally:
        operator.stop()
    account = f"system:serviceaccount:{home}:kuberay-operator"
    # A watch is logged when it ends: give the server a moment to see the operator's connections close.
    time.sleep(1)
    used = {
        request_pair(found.group(1), found.group(2))
        for line in (server.data_dir / "localkube.log").read_text().splitlines()
        if (found := _REQUEST.search(line)) and found.group(3) == account
    }
    grants = granted(role, election)
    assert used - grants == set(), "used without a grant (403s)"
    assert "forbidden" not in log.read_text().lower()
    assert set(FEATURES) <= grants - used, "feature allowances that are not granted, or used after all"
    allowed = (grants - used) & UPSTREAM | set(FEATURES)
    _report_allowances(used, {p: FEATURES.get(p, "upstream v1.5.0 grants it") for p in allowed})
    unexplained = grants - used - allowed
    assert unexplained == set(), (
        "granted, unused, and neither upstream's nor a feature's: remove from deploy/rbac"
    )


def _report_allowances(used: set[Pair], allowed: dict[Pair, str]) -> None:
    lines = [f"operator RBAC: {len(used)} (group, resource, verb) used; granted and unused, allowed:"]
    lines += [f"  {g or 'core'}/{r} {v}: {reason}" for (g, r, v), reason in sorted(allowed.items())]
    report(*lines)


def test_removing_a_used_rule_breaks_the_operator(server: LocalKubeProcess, tmp_path: Path) -> None:
    role = load("role.yaml")
    operators: list[tuple[Pair, OperatorProcess]] = []
    try:
        for index, pair in enumerate(REMOVALS):
            namespace = f"rbac-removal-{index}"
            kubeconfig = install(server, namespace, without(role, pair), tmp_path / f"kubeconfig-{index}")
            log = tmp_path / f"operator-{index}.log"
            operators.append(
                (pair, OperatorProcess(kubeconfig, log, f"--watch-namespace={namespace}").start())
            )
            server.apply(scenario(namespace)[:1])
        for pair, operator in operators:
            group, resource, verb = pair
            # localkube's words for a 403, as the API server's: the operator logs the refusal.
            refusal = f'cannot {verb} resource "{resource}" in API group "{group}"'
            # (The log is JSON: its quotes are escaped.)
            eventually(
                lambda: refusal in operator.log.read_text().replace('\\"', '"'),  # noqa: B023
                90,
                f"403 without {pair}",
                every=0.5,
            )
    finally:
        for _, operator in operators:
            operator.stop()
