import datetime
import re

import pytest

from kuberay.history import layout
from kuberay.history.collector.events import category, job_id_hex

SESSION = "session_2026-01-27_10-52-59_373533_1"


@pytest.mark.parametrize(
    ("cluster", "metadata", "prefix"),
    [
        (layout.ClusterRef("ns", "c1"), "r/cluster-metadata/raycluster/ns_c1/" + SESSION, "r/cluster-history/raycluster/ns/c1"),
        (layout.ClusterRef("ns", "job-abc", "RayJob", "job"), "r/cluster-metadata/rayjob/ns_job_job-abc/" + SESSION,
         "r/cluster-history/rayjob/ns/job/job-abc"),
        # An owner kind upstream does not store under its own kind is a plain RayCluster.
        (layout.ClusterRef("ns", "c2", "RayCronJob", "x"), "r/cluster-metadata/raycluster/ns_c2/" + SESSION,
         "r/cluster-history/raycluster/ns/c2"),
    ],
)  # fmt: skip
def test_keys_are_upstreams_and_metadata_keys_parse_back(cluster, metadata, prefix):
    assert cluster.metadata_key("r", SESSION) == metadata
    assert cluster.prefix("r") == prefix
    parsed, session = layout.metadata_ref(metadata, "r")
    assert (parsed.kind, parsed.namespace, parsed.name, session) == (
        cluster.kind,
        "ns",
        cluster.name,
        SESSION,
    )


def test_node_paths_and_endpoint_keys():
    cluster = layout.ClusterRef("ns", "c")
    assert cluster.logs_dir("", SESSION, "n1") == f"cluster-history/raycluster/ns/c/{SESSION}/n1/logs"
    assert layout.endpoint_key("/api/v0/placement_groups?detail=1") == "restful__api__v0__placement_groups"
    assert layout.endpoint_key("/api/jobs/") == "restful__api__jobs"


@pytest.mark.parametrize("bad", ["session_latest", "../x", "session_2026-01-27_10-52-59"])
def test_names_outside_the_layout_are_refused(bad):
    with pytest.raises(layout.LayoutError, match="invalid session name"):
        layout.ClusterRef("ns", "c").session_dir("", bad)
    with pytest.raises(layout.LayoutError):
        layout.ClusterRef("ns", "c").node_dir("", SESSION, "..")


def test_session_time_is_the_name_s():
    assert layout.session_time(SESSION) == datetime.datetime(2026, 1, 27, 10, 52, 59, 373533, datetime.UTC)


def test_events_are_filed_as_upstream_files_them():
    assert job_id_hex("AQAAAA==") == "01000000" and job_id_hex("02000000") == "02000000"
    assert (
        category({"eventType": "NODE_LIFECYCLE_EVENT", "taskDefinitionEvent": {"jobId": "AQAAAA=="}})
        == "node_events"
    )
    assert (
        category({"eventType": "TASK_LIFECYCLE_EVENT", "taskLifecycleEvent": {"jobId": "AQAAAA=="}})
        == "job_events/01000000"
    )
    # A job id that is no path segment is never used as one.
    filed = category({"eventType": "TASK_LIFECYCLE_EVENT", "taskLifecycleEvent": {"jobId": "../../x"}})
    assert re.fullmatch(r"job_events/[0-9a-f]+|node_events", filed)


@pytest.mark.parametrize(
    ("raw", "filed_as"),
    [("AQAAAA", "01000000"), ("AQAAAA==", "01000000"), ("AQAA-_==", None), ("a+b/c-d_", None),
     ("AQAA.AAA", None), ("AQAAAA=", None), ("AQAAA", None)],
)  # fmt: skip
def test_only_a_job_id_that_is_base64_is_decoded(raw, filed_as):
    # Upstream decodes with Go's strict decoders (URL-safe unpadded, then standard padded) and keeps any
    # other id as it came; a lenient decoder would turn stray characters into some other job's hex.
    assert job_id_hex(raw) == (filed_as or raw)
