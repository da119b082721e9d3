"""`kuberay-operator` with one toy controller, for the process tests.

The toy reconciles ConfigMaps labelled `toy=yes`: it stamps the annotation `toy/reconciled-by` with this
process's pid and logs "toy reconciled". Run as `python toy_operator.py <operator flags>`.
"""

from __future__ import annotations

import logging
import os
import sys

from kuberay.api.settings import OperatorSettings
from kuberay.operator.main import run
from kuberay.operator.registry import ControllerSetup
from kuberay.runtime.controller import Controller, Result
from kuberay.runtime.manager import Manager
from kuberay.runtime.resources import CONFIG_MAP, ObjectKey

log = logging.getLogger("toy")


def install(manager: Manager, settings: OperatorSettings) -> None:
    cache = manager.cache(CONFIG_MAP)

    async def reconcile(key: ObjectKey) -> Result:
        obj = cache.get(key)
        if obj is None or (obj["metadata"].get("labels") or {}).get("toy") != "yes":
            return Result()
        log.info("toy reconciled")
        if (obj["metadata"].get("annotations") or {}).get("toy/reconciled-by") != str(os.getpid()):
            patch = {"metadata": {"annotations": {"toy/reconciled-by": str(os.getpid())}}}
            await manager.client.patch(CONFIG_MAP, key.name, patch, key.namespace)
        return Result()

    manager.add(
        Controller("toy", reconcile, concurrency=settings.config.reconcile_concurrency).for_(CONFIG_MAP)
    )


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:], [ControllerSetup("toy", install)]))
