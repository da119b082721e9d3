"""The root of the History Server's errors: `HistoryServerError` (a `kuberay.errors.KubeRayError`), under which
`layout.LayoutError` (a key or name outside the layout, a ValueError), `storage.StorageError` (a backend
failed or is misconfigured) with `storage.NoSuchKey`, the collector's `collector.settings.
CollectorSettingsError` (a ValueError), and the server's `server.logfile.LogError` (a log request it cannot
answer, with its HTTP status)."""

from kuberay.errors import KubeRayError


class HistoryServerError(KubeRayError):
    """An error of the History Server's collector or server."""
