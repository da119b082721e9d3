import asyncio

from kuberay.runtime.clock import FakeClock
from kuberay.runtime.events import EVENTS_V1, REMEMBER_S, WARNING, EventRecorder
from kuberay.runtime.resources import CONFIG_MAP, EVENT

from .kube import client_for, new_namespace


async def recording(localkube):
    """A client, a fresh namespace, a ConfigMap there to record Events about, a fake clock, and a running
    recorder with its writer task."""
    client = client_for(localkube)
    namespace = await new_namespace(client)
    subject = await client.create(CONFIG_MAP, {"metadata": {"name": "subject", "namespace": namespace}})
    clock = FakeClock()
    recorder = EventRecorder(client, component="raycluster-controller", instance="test", clock=clock)
    return client, namespace, subject, clock, recorder, asyncio.create_task(recorder.run())


async def test_repeated_events_are_one_event_with_a_count(localkube):
    client, namespace, subject, clock, recorder, writer = await recording(localkube)
    for _ in range(3):
        recorder.record(subject, WARNING, "FailedToCreatePod", "quota exceeded", action="Create")
        clock.advance(1)
    recorder.record(subject, WARNING, "FailedToCreatePod", "something else")
    await asyncio.wait_for(recorder.flush(), 20)
    writer.cancel()
    events = sorted((await client.list(EVENT, namespace)).items, key=lambda e: e["message"])
    assert [(e["message"], e["count"]) for e in events] == [("quota exceeded", 3), ("something else", 1)]
    repeated = events[0]
    assert repeated["involvedObject"]["uid"] == subject["metadata"]["uid"]
    assert (repeated["type"], repeated["reason"], repeated["action"]) == (
        WARNING,
        "FailedToCreatePod",
        "Create",
    )
    assert repeated["source"]["component"] == "raycluster-controller"
    assert (repeated["firstTimestamp"], repeated["lastTimestamp"]) == (
        "2026-01-01T00:00:00Z",
        "2026-01-01T00:00:02Z",
    )
    await client.close()


async def test_an_event_not_repeated_within_ten_minutes_is_forgotten(localkube):
    client, namespace, subject, clock, recorder, writer = await recording(localkube)
    recorder.record(subject, WARNING, "FailedToCreatePod", "quota exceeded")
    await asyncio.wait_for(recorder.flush(), 20)
    clock.advance(REMEMBER_S + 1)
    recorder.record(subject, WARNING, "Other", "another pod")
    recorder.record(subject, WARNING, "FailedToCreatePod", "quota exceeded")
    await asyncio.wait_for(recorder.flush(), 20)
    writer.cancel()
    events = (await client.list(EVENT, namespace)).items
    assert sorted((e["reason"], e["count"]) for e in events) == [
        ("FailedToCreatePod", 1),
        ("FailedToCreatePod", 1),
        ("Other", 1),
    ]
    assert len(recorder._written) == 2  # the first Event's memory went with its ten minutes
    await client.close()


async def test_a_controllers_events_are_events_k8s_io_v1_with_a_series(localkube):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    subject = await client.create(CONFIG_MAP, {"metadata": {"name": "subject", "namespace": namespace}})
    clock = FakeClock()
    recorder = EventRecorder(client, component="kuberay-operator", instance="test", clock=clock)
    writer = asyncio.create_task(recorder.run())
    rayservice = recorder.for_controller("rayservice-controller")
    for _ in range(2):
        rayservice.record(subject, WARNING, "FailedToUpdateService", "no", action="Update")
        clock.advance(1)
    await asyncio.wait_for(recorder.flush(), 20)
    writer.cancel()
    [event] = (await client.list(EVENTS_V1, namespace)).items
    assert (event["reportingController"], event["reportingInstance"]) == ("rayservice-controller", "test")
    assert (event["regarding"]["uid"], event["note"], event["action"]) == (
        subject["metadata"]["uid"],
        "no",
        "Update",
    )
    assert event["eventTime"] == "2026-01-01T00:00:00.000000Z"
    assert event["series"] == {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"}
    # The same object read as core/v1, as `kubectl get events` shows it.
    [core] = (await client.list(EVENT, namespace)).items
    assert (core["message"], core["reportingComponent"]) == ("no", "rayservice-controller")
    await client.close()


async def test_a_message_over_the_api_servers_limit_is_cut_to_it_on_a_character_boundary(localkube):
    # kube-apiserver refuses an Event whose message is over 1024 bytes (a Serve traceback is longer): the
    # real kubelet tier found RayService Events lost so.
    client = client_for(localkube)
    namespace = await new_namespace(client)
    subject = await client.create(CONFIG_MAP, {"metadata": {"name": "subject", "namespace": namespace}})
    recorder = EventRecorder(client, component="kuberay-operator", instance="test", clock=FakeClock())
    writer = asyncio.create_task(recorder.run())
    traceback = "Traceback: é" * 300  # 3,900 bytes, two of them in each é
    recorder.for_controller("rayservice-controller").record(subject, WARNING, "ServeFailed", traceback)
    recorder.record(subject, WARNING, "FailedToCreatePod", traceback)  # a core/v1 Event, cut the same
    await asyncio.wait_for(recorder.flush(), 20)
    writer.cancel()
    events = (await client.list(EVENT, namespace)).items
    assert sorted(e["reason"] for e in events) == ["FailedToCreatePod", "ServeFailed"]
    for event in events:
        message = event["message"]
        assert len(message.encode()) <= 1024 < len(traceback.encode())
        assert message.endswith(" ...") and traceback.startswith(message.removesuffix(" ..."))
    await client.close()
