"""The root of the node agent's errors: `NodeError` (a `localkube.errors.LocalkubeError`), under which
`network.NetworkError` (a RuntimeError) with `network.BridgeInUse`, `environment.ContainerConfigError` (a
ValueError) with `environment.MissingCommand`, `volumes.VolumeError` and `simulate.SimulationError`
(ValueErrors), `logs.LogNotFound` (a LookupError), `exec.ExecError` and `apiclient.RequestFailed`.
`mountns.MountError` stands apart: `mountns` is a script of the standard library alone (`python -I -S`,
inside a container's mount namespace), which cannot import this root."""

from localkube.errors import LocalkubeError


class NodeError(LocalkubeError):
    """An error of the node agent."""
