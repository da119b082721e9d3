"""The root of the api package's errors: `RayApiError` (a `kuberay.errors.KubeRayError`).

Under it, `InputError`, a ValueError (a configuration, a flag, an environment variable, a manifest or a
schedule the operator cannot use), under which each reader raises its own (`config.ConfigError`,
`features.FeatureGateError`, `settings.EnvVarError`, `manifest.ManifestError`, `validation.cron.CronError`);
and the two faults of the package's own tables: `k8sschema.UnknownDefinition` (a KeyError) and
`crd.UnsupportedType` (a TypeError). Admission failures are not exceptions: validation yields `FieldError`s."""

from kuberay.errors import KubeRayError


class RayApiError(KubeRayError):
    """An error of the ray.io API package."""


class InputError(RayApiError, ValueError):
    """Input the operator cannot use; the message names what and where."""
