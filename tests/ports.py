"""Free loopback ports for the processes the tests start: `kuberay local up`'s own choice (outside the
kernel's ephemeral range, so no outgoing connection takes one before the process binds it)."""

from kuberay.local.ports import free_port

__all__ = ["free_port"]
