import asyncio
from pathlib import Path

import pytest
import yaml

from kuberay.runtime import errors
from kuberay.runtime.client import Client, load_config
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.leaderelection import LeaderElectionConfig, LeaderElector
from kuberay.runtime.resources import CONFIG_MAP, LEASE
from support.cable import Cable
from support.eventually import eventually

from .kube import client_for, new_namespace


def _localkube_log(localkube) -> str:
    return (localkube.data_dir / "localkube.log").read_text(errors="replace")


def elector(client: Client, namespace: str, identity: str, clock: FakeClock) -> LeaderElector:
    config = LeaderElectionConfig(
        namespace, identity=identity, lease_duration=15, renew_deadline=10, retry_period=2
    )
    return LeaderElector(client, config, clock)


async def test_a_follower_takes_an_unrenewed_lease_only_after_the_lease_duration(localkube):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    clock = FakeClock()
    leader, follower = elector(client, namespace, "a", clock), elector(client, namespace, "b", clock)
    await leader.acquire()
    assert not await follower._try_acquire_or_renew()  # first sight of the record starts its clock
    clock.advance(14)
    assert not await follower._try_acquire_or_renew()
    clock.advance(1)
    assert await follower._try_acquire_or_renew()
    lease = await client.get(LEASE, "ray-operator-leader", namespace)
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("b", 1)
    # The old leader sees a new holder whose record it has not watched expire: it does not renew.
    assert not await leader._try_acquire_or_renew()
    await client.close()


async def test_a_released_lease_is_taken_at_once(localkube):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    clock = FakeClock()
    leader, follower = elector(client, namespace, "a", clock), elector(client, namespace, "b", clock)
    await leader.acquire()
    assert not await follower._try_acquire_or_renew()
    await leader.release()
    assert await asyncio.wait_for(follower._try_acquire_or_renew(), 10)
    await client.close()


async def test_writes_are_fenced_once_the_renewal_is_older_than_the_renew_deadline(localkube):
    client = client_for(localkube)
    namespace = await new_namespace(client)
    clock = FakeClock()
    leader = elector(client, namespace, "a", clock)
    writer = client.fenced(leader.holds)
    await leader.acquire()
    await writer.create(CONFIG_MAP, {"metadata": {"name": "before", "namespace": namespace}})
    clock.advance(10)  # paused (SIGSTOP) past the renew deadline: a successor may lead by now
    with pytest.raises(errors.NotLeader):
        await writer.create(CONFIG_MAP, {"metadata": {"name": "after", "namespace": namespace}})
    # The namespace's own kube-root-ca.crt may be there too (its publisher works in the background).
    names = {c["metadata"]["name"] for c in (await writer.list(CONFIG_MAP, namespace)).items}
    assert names - {"kube-root-ca.crt"} == {"before"}
    assert await leader._try_acquire_or_renew()  # nobody took over: renewed, it writes again
    await writer.create(CONFIG_MAP, {"metadata": {"name": "renewed", "namespace": namespace}})
    await client.close()


async def test_a_write_whose_lease_lapses_between_its_headers_and_its_body_is_not_carried_out(localkube):
    """The fence is checked again as the body goes out: the lease lapsing after the headers left (a pause
    between two socket writes) refuses the body, and the server, left without it, does nothing."""
    client = client_for(localkube)
    namespace = await new_namespace(client)
    await client.create(CONFIG_MAP, {"metadata": {"name": "kept", "namespace": namespace}})
    checks: list[bool] = []

    def holds_until_the_headers_left() -> bool:
        # The fence's checks: before the request, as its headers go out, as its body goes out.
        checks.append(len(checks) < 2)
        return checks[-1]

    writer = client.fenced(holds_until_the_headers_left)
    with pytest.raises(errors.NotLeader, match="refused, the leader lease is no longer held"):
        await writer.delete(CONFIG_MAP, "kept", namespace, propagation_policy="Background")
    assert checks == [True, True, False]
    await eventually(
        lambda: f"dropped DELETE /api/v1/namespaces/{namespace}/configmaps/kept" in _localkube_log(localkube),
        what=lambda: "localkube never saw the request cut before its body",
    )
    assert await client.get(CONFIG_MAP, "kept", namespace)
    await client.close()


async def test_a_write_waiting_for_its_connection_when_the_lease_lapses_is_not_sent(
    localkube, tmp_path: Path
):
    """The fence is checked as the request's bytes are about to leave, not when it was issued: a write that
    passed its token wait and then waited for a connection (a pause, a slow network) while the renewal went
    stale is refused, and never reaches the server on resume."""
    client = client_for(localkube)
    namespace = await new_namespace(client)
    kubeconfig = yaml.safe_load(Path(localkube.kubeconfig).read_text())
    server = kubeconfig["clusters"][0]["cluster"]["server"]
    host, port = server.removeprefix("https://").rsplit(":", 1)
    cable = Cable(host, int(port))
    await cable.plug()
    kubeconfig["clusters"][0]["cluster"]["server"] = f"https://{host}:{cable.port}"
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    clock = FakeClock()
    leader = elector(client, namespace, "a", clock)
    await leader.acquire()
    writer = Client.from_config(load_config(str(tmp_path / "kubeconfig"))).fenced(leader.holds)
    try:
        await cable.hold()
        write = asyncio.ensure_future(
            writer.create(CONFIG_MAP, {"metadata": {"name": "late", "namespace": namespace}})
        )
        await eventually(lambda: cable.held == 1, what=lambda: "the write never opened its connection")
        clock.advance(10)
        await cable.release()
        with pytest.raises(errors.NotLeader, match="refused, the leader lease is no longer held"):
            await write
        assert "late" not in [c["metadata"]["name"] for c in (await client.list(CONFIG_MAP, namespace)).items]
    finally:
        await cable.unplug()
        await writer.close()
        await client.close()
