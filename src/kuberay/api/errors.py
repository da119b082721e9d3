"""The root of the api package's input errors: `InputError`, a ValueError (a configuration, a flag, an
environment variable, a manifest or a schedule the operator cannot use), under which each reader raises its
own (`config.ConfigError`, `features.FeatureGateError`, `settings.EnvVarError`, `manifest.ManifestError`,
`validation.cron.CronError`). Admission failures are not exceptions: validation yields `FieldError`s."""


class InputError(ValueError):
    """Input the operator cannot use; the message names what and where."""
