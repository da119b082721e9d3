"""The root of the builders' errors: `BuildError`, a ValueError (the object asks for something that cannot be
built), under which each builder raises its own (`pod.PodBuildError`, `service.ServiceBuildError`,
`submitter.SubmitterError`, `goformat.GoEncodingError`)."""

from kuberay.errors import KubeRayError


class BuildError(KubeRayError, ValueError):
    """The object cannot be built as it asks; the message names the field, in upstream's words."""
