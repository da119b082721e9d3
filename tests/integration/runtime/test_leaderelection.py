import asyncio

import pytest

from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.clock import FakeClock
from kuberay.runtime.leaderelection import LeaderElectionConfig, LeaderElector
from kuberay.runtime.resources import CONFIG_MAP, LEASE

from .kube import client_for, new_namespace


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
    assert [c["metadata"]["name"] for c in (await writer.list(CONFIG_MAP, namespace)).items] == ["before"]
    assert await leader._try_acquire_or_renew()  # nobody took over: renewed, it writes again
    await writer.create(CONFIG_MAP, {"metadata": {"name": "renewed", "namespace": namespace}})
    await client.close()
