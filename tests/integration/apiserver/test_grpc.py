"""Each gRPC method through a client generated (grpcio-tools, at test time) from the same .proto files the
server serves: create, get, list (paged) and delete, upstream's status codes and messages, reflection."""

from __future__ import annotations

import importlib
import sys
from collections.abc import AsyncIterator, Iterator
from types import ModuleType, SimpleNamespace
from typing import Any

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_tools import protoc

from kuberay.apiserver import protos
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.client import Client
from support.apiserver_process import ApiServerProcess

from .test_rest import eventually_gone


@pytest.fixture(scope="module")
def pb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    out = tmp_path_factory.mktemp("stubs")
    args = ["protoc", *(f"-I{d}" for d in protos.include_dirs()), f"--python_out={out}", f"--grpc_python_out={out}",
            *protos.PROTO_FILES]  # fmt: skip
    assert protoc.main(args) == 0
    sys.path.insert(0, str(out))
    try:
        names = [f"{f.removesuffix('.proto')}_pb2{s}" for f in protos.PROTO_FILES for s in ("", "_grpc")
                 if not (f == "error.proto" and s)]  # fmt: skip
        modules: dict[str, ModuleType] = {name: importlib.import_module(name) for name in names}
        yield SimpleNamespace(**modules)
    finally:
        sys.path.remove(str(out))
        for name in names:
            sys.modules.pop(name, None)


@pytest.fixture
async def channel(apiserver: ApiServerProcess) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(apiserver.grpc_target) as channel:
        yield channel


async def test_compute_templates_and_clusters_over_grpc(
    pb: Any, channel: grpc.aio.Channel, kube: Client, namespace: str
) -> None:
    templates = pb.config_pb2_grpc.ComputeTemplateServiceStub(channel)
    clusters = pb.cluster_pb2_grpc.ClusterServiceStub(channel)
    template = pb.config_pb2.ComputeTemplate(name="small", namespace=namespace, cpu=1, memory=2)
    created = await templates.CreateComputeTemplate(
        pb.config_pb2.CreateComputeTemplateRequest(compute_template=template, namespace=namespace)
    )
    assert created.memory_unit == "Gi"
    got = await templates.GetComputeTemplate(
        pb.config_pb2.GetComputeTemplateRequest(name="small", namespace=namespace)
    )
    assert got.cpu == 1
    listed = await templates.ListComputeTemplates(
        pb.config_pb2.ListComputeTemplatesRequest(namespace=namespace)
    )
    assert [t.name for t in listed.compute_templates] == ["small"]
    every = await templates.ListAllComputeTemplates(pb.config_pb2.ListAllComputeTemplatesRequest())
    assert "small" in {t.name for t in every.compute_templates if t.namespace == namespace}

    spec = pb.cluster_pb2.ClusterSpec(
        head_group_spec=pb.cluster_pb2.HeadGroupSpec(
            compute_template="small", ray_start_params={"num-cpus": "0"}
        ),
        worker_group_spec=[
            pb.cluster_pb2.WorkerGroupSpec(
                group_name="w", compute_template="small", replicas=1, max_replicas=2
            )
        ],  # fmt: skip
    )
    for name in ("g1", "g2", "g3"):
        cluster = pb.cluster_pb2.Cluster(name=name, namespace=namespace, user="dave", version="2.46.0",
                                         environment=pb.cluster_pb2.Cluster.STAGING, cluster_spec=spec)  # fmt: skip
        made = await clusters.CreateCluster(
            pb.cluster_pb2.CreateClusterRequest(cluster=cluster, namespace=namespace)
        )
        assert made.environment == pb.cluster_pb2.Cluster.STAGING and made.created_at.seconds > 0
    first = await clusters.ListCluster(pb.cluster_pb2.ListClustersRequest(namespace=namespace, limit=2))
    second = await clusters.ListCluster(
        pb.cluster_pb2.ListClustersRequest(
            namespace=namespace, limit=2, **{"continue": getattr(first, "continue")}
        )
    )
    assert len(first.clusters) == 2 and not getattr(second, "continue")
    assert {c.name for c in [*first.clusters, *second.clusters]} == {"g1", "g2", "g3"}
    every_cluster = await clusters.ListAllClusters(pb.cluster_pb2.ListAllClustersRequest())
    assert {c.name for c in every_cluster.clusters if c.namespace == namespace} == {"g1", "g2", "g3"}
    one = await clusters.GetCluster(pb.cluster_pb2.GetClusterRequest(name="g1", namespace=namespace))
    assert one.cluster_spec.worker_group_spec[0].max_replicas == 2
    await clusters.DeleteCluster(pb.cluster_pb2.DeleteClusterRequest(name="g3", namespace=namespace))
    await eventually_gone(kube, RAYCLUSTER, "g3", namespace)
    await templates.DeleteComputeTemplate(
        pb.config_pb2.DeleteComputeTemplateRequest(name="small", namespace=namespace)
    )

    with pytest.raises(grpc.aio.AioRpcError) as invalid:
        await clusters.GetCluster(pb.cluster_pb2.GetClusterRequest(namespace=namespace))
    assert invalid.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert invalid.value.details() == ("Cluster name is empty. Please specify a valid value.: Invalid input error: "
                                       "Cluster name is empty. Please specify a valid value.")  # fmt: skip
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await templates.GetComputeTemplate(
            pb.config_pb2.GetComputeTemplateRequest(name="small", namespace=namespace)
        )
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND


async def test_jobs_and_services_over_grpc(pb: Any, channel: grpc.aio.Channel, namespace: str) -> None:
    templates = pb.config_pb2_grpc.ComputeTemplateServiceStub(channel)
    await templates.CreateComputeTemplate(pb.config_pb2.CreateComputeTemplateRequest(
        compute_template=pb.config_pb2.ComputeTemplate(name="small", namespace=namespace, cpu=1, memory=1),
        namespace=namespace))  # fmt: skip
    jobs = pb.job_pb2_grpc.RayJobServiceStub(channel)
    job = pb.job_pb2.RayJob(name="j", namespace=namespace, user="erin", entrypoint="echo 1",
                            cluster_selector={"ray.io/cluster": "elsewhere"})  # fmt: skip
    await jobs.CreateRayJob(pb.job_pb2.CreateRayJobRequest(job=job, namespace=namespace))
    assert (
        await jobs.GetRayJob(pb.job_pb2.GetRayJobRequest(name="j", namespace=namespace))
    ).entrypoint == "echo 1"
    assert [
        j.name for j in (await jobs.ListRayJobs(pb.job_pb2.ListRayJobsRequest(namespace=namespace))).jobs
    ] == ["j"]
    assert "j" in {j.name for j in (await jobs.ListAllRayJobs(pb.job_pb2.ListAllRayJobsRequest())).jobs}
    await jobs.DeleteRayJob(pb.job_pb2.DeleteRayJobRequest(name="j", namespace=namespace))
    with pytest.raises(grpc.aio.AioRpcError) as exists:
        await templates.CreateComputeTemplate(pb.config_pb2.CreateComputeTemplateRequest(
            compute_template=pb.config_pb2.ComputeTemplate(name="small", namespace=namespace, cpu=1, memory=1),
            namespace=namespace))  # fmt: skip
    assert exists.value.code() == grpc.StatusCode.ALREADY_EXISTS

    serve = pb.serve_pb2_grpc.RayServeServiceStub(channel)
    spec = pb.cluster_pb2.ClusterSpec(
        head_group_spec=pb.cluster_pb2.HeadGroupSpec(
            compute_template="small", ray_start_params={"num-cpus": "0"}
        )
    )
    service = pb.serve_pb2.RayService(name="s", namespace=namespace, user="erin", serve_config_V2="applications: []",
                                      cluster_spec=spec)  # fmt: skip
    await serve.CreateRayService(pb.serve_pb2.CreateRayServiceRequest(service=service, namespace=namespace))
    service.serve_config_V2 = "applications: []\n"
    updated = await serve.UpdateRayService(pb.serve_pb2.UpdateRayServiceRequest(service=service, namespace=namespace,
                                                                                name="s"))  # fmt: skip
    assert updated.serve_config_V2 == "applications: []\n"
    page = await serve.ListRayServices(pb.serve_pb2.ListRayServicesRequest(namespace=namespace, page_size=5))
    assert [s.name for s in page.services] == ["s"] and page.total_size == 1
    assert "s" in {
        s.name for s in (await serve.ListAllRayServices(pb.serve_pb2.ListAllRayServicesRequest())).services
    }
    assert (
        await serve.GetRayService(pb.serve_pb2.GetRayServiceRequest(name="s", namespace=namespace))
    ).user == "erin"
    await serve.DeleteRayService(pb.serve_pb2.DeleteRayServiceRequest(name="s", namespace=namespace))


async def test_reflection_lists_the_services(channel: grpc.aio.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)

    async def ask() -> AsyncIterator[Any]:
        yield reflection_pb2.ServerReflectionRequest(list_services="")

    names = set()
    async for answer in stub.ServerReflectionInfo(ask()):
        names |= {s.name for s in answer.list_services_response.service}
    assert names >= {"proto.ClusterService", "proto.ComputeTemplateService", "proto.RayJobService",
                     "proto.RayServeService", "proto.RayJobSubmissionService"}  # fmt: skip


async def test_names_that_would_name_another_url_are_invalid_over_grpc(
    pb: Any, channel: grpc.aio.Channel, namespace: str
) -> None:
    # What the HTTP routes cannot carry (a `/`) reaches the methods over gRPC: each is refused before
    # Kubernetes or a dashboard is asked, as over HTTP (reliability/test_apiserver_hostile_input.py).
    templates = pb.config_pb2_grpc.ComputeTemplateServiceStub(channel)
    submissions = pb.job_submission_pb2_grpc.RayJobSubmissionServiceStub(channel)
    for name in ("..", "../../namespaces/kube-system", "a/b", "a\x00b", "x" * 300):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await templates.GetComputeTemplate(
                pb.config_pb2.GetComputeTemplateRequest(name=name, namespace=namespace)
            )
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, name
        assert "name: invalid value" in (refused.value.details() or ""), refused.value.details()
    # A cluster name or namespace is a part of the dashboard's host name: none may make it another host.
    for cluster, space in (("169.254.169.254#", namespace), ("x", "evil.example:80/"), ("x", "a.b")):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await submissions.GetJobDetails(
                pb.job_submission_pb2.GetJobDetailsRequest(
                    namespace=space, clustername=cluster, submissionid="s"
                )
            )
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (cluster, space)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await submissions.GetJobDetails(
            pb.job_submission_pb2.GetJobDetailsRequest(
                namespace=namespace, clustername="x", submissionid="../../api"
            )
        )
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
