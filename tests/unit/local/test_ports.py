"""The ports `kuberay local up` hands its children: free, and where the kernel gives none out on its own."""

from __future__ import annotations

import socket

from kuberay.local import ports


def test_a_free_port_is_below_the_kernels_ephemeral_range_and_bindable() -> None:
    low, _ = ports.ephemeral_range()
    assert low > ports.LOWEST_PICKED, "this machine's ephemeral range leaves no room below it"
    for _ in range(20):
        port = ports.free_port()
        assert ports.LOWEST_PICKED <= port < low
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))


def test_a_port_held_by_a_listener_is_not_free() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", ports.free_port()))
        held.listen()
        assert not ports.port_free(held.getsockname()[1])


def test_with_no_room_below_the_range_the_kernel_picks() -> None:
    # A range said to start at the lowest port picked leaves no candidate: the kernel's pick, from the
    # machine's own range, and free.
    port = ports.free_port(ephemeral=(ports.LOWEST_PICKED, 65535))
    low, high = ports.ephemeral_range()
    assert low <= port <= high
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
