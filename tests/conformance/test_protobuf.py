"""Protobuf request bodies, as client-go sends them for built-in kinds, answered in JSON.

client-go (and so controller-runtime, upstream KubeRay's operator) posts Pods, Services, Events, Jobs and
RBAC objects as protobuf, with `Accept: application/vnd.kubernetes.protobuf,application/json`, and does
not fall back to JSON. The bodies here are encoded by hand from Kubernetes' field numbers (support.py's
helpers, independent of the server's table), plus the real kubectl's typed `create` commands.
"""

from __future__ import annotations

import httpx

from conformance.support import PROTOBUF, ROOT_CA, Kubectl, entry, envelope, f

CLIENT_GO_ACCEPT = f"{PROTOBUF},application/json"


def post(api: httpx.Client, path: str, body: bytes) -> httpx.Response:
    headers = {"Content-Type": PROTOBUF, "Accept": CLIENT_GO_ACCEPT}
    return api.post(path, content=body, headers=headers)


def test_a_pod_as_client_go_encodes_it(api: httpx.Client, namespace: str) -> None:
    # ObjectMeta: name 1, labels 11, creationTimestamp 8 (Go writes the zero Time as an empty message).
    meta = f(1, "web") + entry(11, "app", "web") + f(8, b"")
    limits = entry(1, "cpu", f(1, "500m")) + entry(1, "memory", f(1, "1Gi"))  # ResourceRequirements.limits
    probe = f(1, f(2, f(1, "/healthz") + f(2, f(1, 0) + f(2, 8080))))  # Probe.handler.httpGet.path/port (int)
    liveness = f(1, f(2, f(2, f(1, 1) + f(3, "http"))))  # httpGet.port as a name
    container = (
        f(1, "ray-head") + f(2, "rayproject/ray:2.52.0") + f(3, "ray") + f(3, "start")  # name, image, command
        + f(6, f(1, "http") + f(2, 0) + f(3, 8080) + f(4, "TCP"))  # ports (hostPort 0, as Go writes it)
        + f(16, 0)  # stdin: false, written as Go writes every non-pointer field
        + f(7, f(1, "RAY_PORT") + f(2, "6379"))  # env
        + f(7, f(1, "POD_IP") + f(3, f(1, f(1, "v1") + f(2, "status.podIP"))))  # env valueFrom.fieldRef
        + f(7, f(1, "MODE") + f(3, f(3, f(1, f(1, "settings")) + f(2, "mode"))))  # configMapKeyRef: name inline
        + f(8, limits) + f(10, liveness) + f(11, probe) + f(14, b"")  # resources, liveness, readiness, imagePullPolicy (empty)
    )  # fmt: skip
    volumes = (
        f(1, f(1, "logs") + f(2, f(2, b"")))  # Volume.name, the inline VolumeSource's emptyDir
        + f(1, f(1, "settings") + f(2, f(19, f(1, f(1, "settings")) + f(3, 420))))  # configMap, name inline
    )  # fmt: skip
    # containers, restartPolicy, terminationGracePeriodSeconds, serviceAccountName
    # hostNetwork (a plain bool, false), automountServiceAccountToken (a pointer, false)
    spec = volumes + f(2, container) + f(3, "Always") + f(4, 30) + f(8, "default") + f(11, 0) + f(21, 0)
    response = post(
        api, f"/api/v1/namespaces/{namespace}/pods", envelope("v1", "Pod", f(1, meta) + f(2, spec))
    )
    assert response.status_code == 201, response.text
    assert response.headers["content-type"].startswith("application/json")
    pod = api.get(f"/api/v1/namespaces/{namespace}/pods/web").json()
    assert pod["metadata"]["labels"] == {"app": "web"}
    assert pod["metadata"]["creationTimestamp"].startswith("20")  # the server's, not the zero time sent
    (got,) = pod["spec"]["containers"]
    assert got["command"] == ["ray", "start"]
    assert got["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert got["env"][0] == {"name": "RAY_PORT", "value": "6379"}
    assert got["env"][1]["valueFrom"]["fieldRef"] == {"apiVersion": "v1", "fieldPath": "status.podIP"}
    assert got["env"][2]["valueFrom"]["configMapKeyRef"] == {"name": "settings", "key": "mode"}
    assert pod["spec"]["volumes"] == [
        {"name": "logs", "emptyDir": {}},
        {"name": "settings", "configMap": {"name": "settings", "defaultMode": 420}},
    ]
    assert got["resources"] == {"limits": {"cpu": "500m", "memory": "1Gi"}}
    assert got["readinessProbe"]["httpGet"]["port"] == 8080
    assert got["livenessProbe"]["httpGet"]["port"] == "http"
    assert pod["spec"]["terminationGracePeriodSeconds"] == 30
    assert pod["spec"]["serviceAccountName"] == "default"
    # A Go zero value is left out where Kubernetes' JSON omits it, and kept where it is a set pointer.
    assert "stdin" not in got and "hostNetwork" not in pod["spec"]
    assert pod["spec"]["automountServiceAccountToken"] is False


def test_core_and_events_api_events_with_their_times(api: httpx.Client, namespace: str) -> None:
    first = f(1, 1_764_547_200)  # 2025-12-01T00:00:00Z
    micro = f(1, 1_764_547_200) + f(2, 123_456_000)
    involved = f(1, "Pod") + f(2, namespace) + f(3, "web") + f(5, "v1")
    core = (
        f(1, f(1, "web.1") + f(3, namespace)) + f(2, involved) + f(3, "Created") + f(4, "Created pod web")
        + f(5, f(1, "raycluster-controller")) + f(6, first) + f(7, first) + f(8, 1) + f(9, "Normal")
        + f(10, b"")  # eventTime: the zero MicroTime
    )  # fmt: skip
    response = post(api, f"/api/v1/namespaces/{namespace}/events", envelope("v1", "Event", core))
    assert response.status_code == 201, response.text
    event = api.get(f"/api/v1/namespaces/{namespace}/events/web.1").json()
    assert event["involvedObject"] == {
        "kind": "Pod",
        "namespace": namespace,
        "name": "web",
        "apiVersion": "v1",
    }
    assert (event["reason"], event["message"], event["count"]) == ("Created", "Created pod web", 1)
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2025-12-01T00:00:00Z"
    assert event["source"] == {"component": "raycluster-controller"}
    assert event.get("eventTime") is None

    # events.k8s.io/v1 shares the kind's name but not its field numbers.
    modern = (
        f(1, f(1, "web.2") + f(3, namespace)) + f(2, micro) + f(4, "ray.io/raycluster-controller")
        + f(5, "operator-0") + f(6, "Create") + f(7, "Created") + f(8, involved) + f(10, "Created pod web")
        + f(11, "Normal")
    )  # fmt: skip
    path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    response = post(api, path, envelope("events.k8s.io/v1", "Event", modern))
    assert response.status_code == 201, response.text
    event = api.get(f"{path}/web.2").json()
    assert event["eventTime"] == "2025-12-01T00:00:00.123456Z"
    assert (event["reportingController"], event["note"], event["regarding"]["name"]) == (
        "ray.io/raycluster-controller", "Created pod web", "web"
    )  # fmt: skip


def test_a_service_whose_target_port_is_the_zero_value_targets_its_port(
    api: httpx.Client, namespace: str
) -> None:
    zero = f(1, 0) + f(2, 0)  # IntOrString as Go writes an unset one: type int, value 0
    ports = (
        f(1, f(1, "dashboard") + f(2, "TCP") + f(3, 8265) + f(4, zero))  # ServicePort name, protocol, port, targetPort
        + f(1, f(1, "gcs") + f(2, "TCP") + f(3, 6379) + f(4, f(1, 1) + f(3, "gcs-server")))
    )  # fmt: skip
    spec = ports + entry(2, "ray.io/node-type", "head") + f(4, "ClusterIP")  # ports, selector, type
    body = envelope("v1", "Service", f(1, f(1, "head-svc")) + f(2, spec))
    response = post(api, f"/api/v1/namespaces/{namespace}/services", body)
    assert response.status_code == 201, response.text
    service = api.get(f"/api/v1/namespaces/{namespace}/services/head-svc").json()
    assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [
        (8265, 8265),
        (6379, "gcs-server"),
    ]
    assert service["spec"]["selector"] == {"ray.io/node-type": "head"}


def test_a_custom_resource_in_protobuf_is_refused_with_415(api: httpx.Client, namespace: str) -> None:
    # kube-apiserver reads custom resources as JSON or YAML only; client-go sends them as JSON.
    body = envelope("ray.io/v1", "RayCluster", f(1, f(1, "raycluster")))
    response = post(api, f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters", body)
    assert response.status_code == 415
    assert response.json()["reason"] == "UnsupportedMediaType"


def test_a_malformed_body_is_a_400_that_says_so_and_stores_nothing(api: httpx.Client, namespace: str) -> None:
    # A Pod whose metadata's name field says 40 bytes follow, and 3 do.
    body = envelope("v1", "Pod", f(1, b"\x0a\x28web"))
    response = post(api, f"/api/v1/namespaces/{namespace}/pods", body)
    assert response.status_code == 400, response.text
    assert "protobuf body could not be decoded" in response.json()["message"]
    assert api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"] == []


def test_reads_and_watches_answer_json_when_protobuf_is_also_acceptable(
    api: httpx.Client, namespace: str
) -> None:
    api.post(
        f"/api/v1/namespaces/{namespace}/configmaps", json={"metadata": {"name": "c"}}
    ).raise_for_status()
    headers = {"Accept": CLIENT_GO_ACCEPT}
    listed = api.get(f"/api/v1/namespaces/{namespace}/configmaps", headers=headers)
    assert listed.headers["content-type"].startswith("application/json")
    assert [c["metadata"]["name"] for c in listed.json()["items"]] == ["c", ROOT_CA]
    params = {"watch": "true", "resourceVersion": "0", "timeoutSeconds": "2"}
    with api.stream(
        "GET", f"/api/v1/namespaces/{namespace}/configmaps", params=params, headers=headers
    ) as events:
        assert events.headers["content-type"].startswith("application/json")
        assert '"ADDED"' in next(events.iter_lines())


def test_kubectl_typed_creates_of_jobs_services_budgets_and_ingresses(
    kubectl: Kubectl, namespace: str, api: httpx.Client
) -> None:
    kubectl("create", "job", "-n", namespace, "once", "--image=busybox", "--", "echo", "hi")
    kubectl("create", "service", "clusterip", "-n", namespace, "head", "--tcp=8265:8265")
    kubectl(
        "create", "poddisruptionbudget", "-n", namespace, "keep", "--selector=app=ray", "--min-available=50%"
    )
    kubectl("create", "ingress", "-n", namespace, "dash", "--rule=ray.example.com/*=head:8265")
    job = api.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/once").json()
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert (container["image"], container["command"]) == ("busybox", ["echo", "hi"])
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    service = api.get(f"/api/v1/namespaces/{namespace}/services/head").json()
    assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [(8265, 8265)]
    budget = api.get(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/keep").json()
    assert budget["spec"]["minAvailable"] == "50%"
    assert budget["spec"]["selector"] == {"matchLabels": {"app": "ray"}}
    ingress = api.get(f"/apis/networking.k8s.io/v1/namespaces/{namespace}/ingresses/dash").json()
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "ray.example.com"
    assert rule["http"]["paths"][0]["backend"]["service"] == {"name": "head", "port": {"number": 8265}}


def test_kubectl_typed_creates_of_every_kind_it_has_a_command_for(
    kubectl: Kubectl, namespace: str, api: httpx.Client
) -> None:
    """The kinds whose schema the generator added (kubectl's typed commands send protobuf and never fall
    back to JSON: each of these was a 415 while the table listed 27 kinds by hand)."""
    priority_class = f"{namespace}-high"[:63]
    kubectl("create", "quota", "-n", namespace, "limits", "--hard=pods=4,requests.cpu=2,count/jobs.batch=1")
    kubectl("create", "priorityclass", priority_class, "--value=1000", "--description=ray heads")
    try:
        kubectl("create", "cronjob", "-n", namespace, "nightly", "--image=busybox", "--schedule=0 3 * * *")
        kubectl("create", "deployment", "-n", namespace, "web", "--image=nginx", "--replicas=2", "--port=80")
        kubectl("autoscale", "deployment", "-n", namespace, "web", "--min=2", "--max=5", "--cpu-percent=80")
        quota = api.get(f"/api/v1/namespaces/{namespace}/resourcequotas/limits").json()
        assert quota["spec"]["hard"] == {"pods": "4", "requests.cpu": "2", "count/jobs.batch": "1"}
        high = api.get(f"/apis/scheduling.k8s.io/v1/priorityclasses/{priority_class}").json()
        assert (high["value"], high["description"]) == (1000, "ray heads")
        cron = api.get(f"/apis/batch/v1/namespaces/{namespace}/cronjobs/nightly").json()
        assert cron["spec"]["schedule"] == "0 3 * * *"
        (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "busybox"
        deployment = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()
        assert deployment["spec"]["replicas"] == 2
        assert deployment["spec"]["selector"] == {"matchLabels": {"app": "web"}}
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
        autoscalers = f"/apis/autoscaling/v1/namespaces/{namespace}/horizontalpodautoscalers"
        autoscaler = api.get(f"{autoscalers}/web").json()
        assert (autoscaler["spec"]["minReplicas"], autoscaler["spec"]["maxReplicas"]) == (2, 5)
        target = autoscaler["spec"]["scaleTargetRef"]
        assert target == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
        assert autoscaler["spec"]["targetCPUUtilizationPercentage"] == 80
    finally:
        kubectl("delete", "priorityclass", priority_class)
