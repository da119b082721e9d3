"""The root of localkube's controllers' errors: `ControllerManagerError` (a `localkube.errors.LocalkubeError`),
under which `rollout.RolloutError` (a ValueError) and `api.UnknownResource` (a LookupError)."""

from localkube.errors import LocalkubeError


class ControllerManagerError(LocalkubeError):
    """An error of a controller of localkube's controller manager."""
