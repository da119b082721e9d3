"""The root of kuberay's errors: `KubeRayError`, which every exception class of `kuberay` derives from.

The scheme, one root per package, each deriving from the root of the package above it:

- `kuberay.errors.KubeRayError`
  - `api.errors.RayApiError` (over `InputError`, `k8sschema.UnknownDefinition`, `crd.UnsupportedType`)
  - `builders.errors.BuildError`
  - `runtime.errors.ControllerRuntimeError` (over `KubeError`, the API boundary's errors)
  - `rayclient.dashboard.DashboardError`
  - `controllers.errors.ReconcileError`
  - `schedulers.errors.SchedulerPluginError`
  - `kubectl.errors.KubectlPluginError`, `apiserver.errors.ApiServerError`,
    `history.errors.HistoryServerError`, `operator.settings.SettingsError`
  - `local.errors.LocalModeError`

A package's errors derive from its root and keep the builtin class callers catch (`ValueError`,
`LookupError`, `TypeError`, `TimeoutError`) as a second base, so `except ValueError` still catches what it
caught. A root adds no behaviour: messages and exit codes stay with the classes that raise them. The exception
class names are unique across `src/` (kuberay, localkube and kubesemantics), so a name says which error it is.
"""


class KubeRayError(Exception):
    """An error of kuberay; catch a package's root or a class of it, this one only at a process boundary."""
