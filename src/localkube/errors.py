"""The root of localkube's errors: `LocalkubeError`, which every exception class of `localkube` derives from.

One root per package, each deriving from this one:

- `localkube.errors.LocalkubeError`
  - `admission.errors.AdmissionControlError`
  - `patch.errors.PatchingError`
  - `storage.errors.StoreError`
  - `server.errors.ServingError`
  - `node.errors.NodeError`
  - `controllers.errors.ControllerManagerError`

As in kuberay (`kuberay.errors`), an error keeps the builtin class its callers catch (`ValueError`,
`LookupError`, `RuntimeError`) as a second base, and its name is unique across `src/`. The one error outside
the scheme is `node.mountns.MountError`: `mountns` runs as a script of the standard library alone.
"""


class LocalkubeError(Exception):
    """An error of localkube; catch a package's root or a class of it, this one only at a process boundary."""
