import ipaddress

import pytest

from localkube.node.network import AddressPool, NetworkError

SMALL = ipaddress.IPv4Network("10.0.0.0/29")  # six pod addresses: .1 to .6


def test_each_key_keeps_one_address_and_no_address_is_handed_out_twice() -> None:
    pool = AddressPool(SMALL, reserved=["10.0.0.1"])
    given = [pool.assign(f"pod-{i}") for i in range(5)]
    assert given == ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]
    assert pool.assign("pod-3") == "10.0.0.5"
    with pytest.raises(NetworkError, match="no free pod address left in 10.0.0.0/29"):
        pool.assign("one-too-many")


def test_a_freed_address_is_reused_once_the_network_is_gone_through_oldest_release_first() -> None:
    pool = AddressPool(SMALL)
    for i in range(4):
        pool.assign(f"pod-{i}")
    pool.release("pod-2")
    pool.release("pod-0")
    assert [pool.assign("new-a"), pool.assign("new-b")] == ["10.0.0.5", "10.0.0.6"]
    assert [pool.assign("new-c"), pool.assign("new-d")] == ["10.0.0.3", "10.0.0.1"]
    with pytest.raises(NetworkError):
        pool.assign("new-e")


def test_a_restarted_pool_keeps_the_stored_addresses_and_gives_new_keys_others() -> None:
    pool = AddressPool(SMALL)
    assert pool.assign("kept-a", "10.0.0.2") == "10.0.0.2"
    assert pool.assign("kept-b", "10.0.0.4") == "10.0.0.4"
    assert pool.assign("clash", "10.0.0.4") == "10.0.0.1"  # taken already: a new one instead
    assert pool.assign("elsewhere", "192.168.0.9") == "10.0.0.3"  # not of this network
    assert [pool.assign("new-a"), pool.assign("new-b")] == ["10.0.0.5", "10.0.0.6"]
    pool.release("kept-b")
    assert pool.assign("new-c") == "10.0.0.4"


def test_a_pinned_address_is_shared_and_stays_taken_until_every_holder_is_gone() -> None:
    pool = AddressPool(SMALL)
    first = pool.assign("a")
    pool.pin("b", first)
    pool.pin("outside", "127.0.0.7")
    pool.release("a")
    for i in range(5):
        assert pool.assign(f"new-{i}") != first
    pool.release("b")
    pool.release("outside")
    assert pool.assign("last") == first
    with pytest.raises(NetworkError):
        pool.assign("none-left")  # the pinned address outside the network was never the pool's
