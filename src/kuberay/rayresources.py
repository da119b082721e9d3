"""The ray.io resources as the client addresses them: RayCluster, RayJob, RayService and RayCronJob at
ray.io/v1, each a `Resource` (apiVersion, kind, plural) read off its API type, so that the controllers,
the batch schedulers, `kubectl ray` and the APIServer name them from this one place.

It sits in its own layer (pyproject's import-linter contract), above the runtime whose `Resource` it uses and
below the schedulers, the lowest of its users.
"""

from __future__ import annotations

from kuberay.api import constants
from kuberay.api.meta import KubeObject
from kuberay.api.raycluster import RayCluster
from kuberay.api.raycronjob import RayCronJob
from kuberay.api.rayjob import RayJob
from kuberay.api.rayservice import RayService
from kuberay.runtime.resources import Resource


def _of(kind: type[KubeObject]) -> Resource:
    return Resource(constants.API_VERSION, str(kind.model_fields["kind"].default), kind.PLURAL)


RAYCLUSTER = _of(RayCluster)
RAYJOB = _of(RayJob)
RAYSERVICE = _of(RayService)
RAYCRONJOB = _of(RayCronJob)
