"""The root of the node agent's errors: `NodeError` (a `localkube.errors.LocalkubeError`), under which
`network.NetworkError` (a RuntimeError) with `network.BridgeInUse`, `environment.ContainerConfigError` (a
ValueError) with `environment.MissingCommand`, `volumes.VolumeError` and `simulate.SimulationError`
(ValueErrors), `logs.LogNotFound` (a LookupError), `exec.ExecError`, `mountns.MountError` and
`apiclient.RequestFailed`."""

from localkube.errors import LocalkubeError


class NodeError(LocalkubeError):
    """An error of the node agent."""
