"""A client shaped as upstream's Python APIServer client (`python_apiserver_client.KubeRayAPIs`, spec §3.4),
written from that contract for the tests: base `/apis/v1/`, JSON headers, an optional token in
`Authorization`; every method returns `(http_status, error_message_or_None[, payload])`, the message
taken from the error body's `message`; a wait that runs out returns 408."""

from __future__ import annotations

import time
from typing import Any

import httpx

Result = tuple[int, str | None, Any]


class KubeRayAPIs:
    def __init__(self, server_url: str = "http://localhost:31888", token: str | None = None,
                 wait_interval: float = 2) -> None:  # fmt: skip
        headers = {"Content-Type": "application/json", "accept": "application/json"}
        if token is not None:
            headers["Authorization"] = token
        self._base, self._headers = server_url + "/apis/v1/", headers
        self.wait_interval = wait_interval

    def _call(self, method: str, path: str, body: Any = None, key: str | None = None) -> Result:
        # One request per call, as upstream's `requests` calls are.
        response = httpx.request(method, self._base + path, json=body, headers=self._headers, timeout=50)
        if response.status_code // 100 != 2:
            return response.status_code, response.json()["message"], None
        payload = response.json()
        return response.status_code, None, payload.get(key, []) if key else payload

    # compute templates
    def list_compute_templates(self) -> Result:
        return self._call("GET", "compute_templates", key="computeTemplates")

    def list_compute_templates_namespace(self, ns: str) -> Result:
        return self._call("GET", f"namespaces/{ns}/compute_templates", key="computeTemplates")

    def get_compute_template(self, ns: str, name: str) -> Result:
        return self._call("GET", f"namespaces/{ns}/compute_templates/{name}")

    def create_compute_template(self, template: dict[str, Any]) -> tuple[int, str | None]:
        return self._call("POST", f"namespaces/{template['namespace']}/compute_templates", template)[:2]

    def delete_compute_template(self, ns: str, name: str) -> tuple[int, str | None]:
        return self._call("DELETE", f"namespaces/{ns}/compute_templates/{name}")[:2]

    # clusters
    def list_clusters(self) -> Result:
        return self._call("GET", "clusters", key="clusters")

    def list_clusters_namespace(self, ns: str) -> Result:
        return self._call("GET", f"namespaces/{ns}/clusters", key="clusters")

    def get_cluster(self, ns: str, name: str) -> Result:
        return self._call("GET", f"namespaces/{ns}/clusters/{name}")

    def create_cluster(self, cluster: dict[str, Any]) -> tuple[int, str | None]:
        return self._call("POST", f"namespaces/{cluster['namespace']}/clusters", cluster)[:2]

    def get_cluster_status(self, ns: str, name: str) -> Result:
        status, error, cluster = self.get_cluster(ns, name)
        return (status, error, None) if error else (status, None, cluster.get("clusterState", ""))

    def wait_cluster_ready(self, ns: str, name: str, wait: float = -1) -> tuple[int, str | None]:
        waited = 0.0
        while True:
            status, error, state = self.get_cluster_status(ns, name)
            if error:
                return status, error
            if state == "ready":
                return status, None
            if 0 <= wait <= waited:
                return 408, f"Timed out waiting for cluster ready in {waited} sec"
            time.sleep(self.wait_interval)
            waited += self.wait_interval

    def get_cluster_endpoints(self, ns: str, name: str, wait: float = -1) -> Result:
        status, error = self.wait_cluster_ready(ns, name, wait)
        if error:
            return status, error, None
        status, error, cluster = self.get_cluster(ns, name)
        if error:
            return status, error, None
        return (
            status,
            None,
            f"{name}-head-svc.{ns}.svc.cluster.local:{cluster['serviceEndpoint']['dashboard']}",
        )

    def delete_cluster(self, ns: str, name: str) -> tuple[int, str | None]:
        return self._call("DELETE", f"namespaces/{ns}/clusters/{name}")[:2]

    # job submissions
    def submit_job(self, ns: str, name: str, job_request: dict[str, Any]) -> Result:
        status, error, reply = self._call("POST", f"namespaces/{ns}/jobsubmissions/{name}", job_request)
        return status, error, reply["submissionId"] if reply else None

    def get_job_info(self, ns: str, name: str, sid: str) -> Result:
        return self._call("GET", f"namespaces/{ns}/jobsubmissions/{name}/{sid}")

    def list_job_info(self, ns: str, name: str) -> Result:
        return self._call("GET", f"namespaces/{ns}/jobsubmissions/{name}", key="submissions")

    def get_job_log(self, ns: str, name: str, sid: str) -> Result:
        status, error, reply = self._call("GET", f"namespaces/{ns}/jobsubmissions/{name}/log/{sid}")
        return status, error, reply.get("log", "") if reply is not None else None

    def stop_ray_job(self, ns: str, name: str, sid: str) -> tuple[int, str | None]:
        return self._call("POST", f"namespaces/{ns}/jobsubmissions/{name}/{sid}")[:2]

    def delete_ray_job(self, ns: str, name: str, sid: str) -> tuple[int, str | None]:
        return self._call("DELETE", f"namespaces/{ns}/jobsubmissions/{name}/{sid}")[:2]
