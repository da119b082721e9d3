"""A small Ray Serve application for the end-to-end tests: it answers every request with its greeting and
the value of KUBERAY_ECHO_TAG in its replica's environment, so a test can tell which Ray cluster answered.

Ray finds it through PYTHONPATH (this directory), as a user's containers find their code in the image.
"""

from __future__ import annotations

import os
from typing import Any

from ray import serve
from ray.serve import Application


@serve.deployment(ray_actor_options={"num_cpus": 0})
class Echo:
    def __init__(self, greeting: str) -> None:
        self.greeting = greeting

    async def __call__(self, request: Any) -> str:
        return f"{self.greeting} {os.environ.get('KUBERAY_ECHO_TAG', '')}".strip()


def app(args: dict[str, str]) -> Application:
    return Echo.bind(args.get("greeting", "hello"))
