"""The real Helm for the tests: `scripts/tools/helm` builds it once (Go module, pinned version) into a cache
directory outside the repository and prints its path; `Helm` runs it with its own config, cache and data
directories (nothing read from or written to the user's), and parses `helm template` output.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from support import toolbuild

REPO = Path(__file__).resolve().parents[2]
CHARTS = REPO / "helm-chart"


class Helm:
    def __init__(self, binary: Path, home: Path) -> None:
        self.binary = binary
        self.env = {
            **os.environ,
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_DATA_HOME": str(home / "data"),
        }

    @classmethod
    def install(cls, home: Path) -> tuple[Helm, float]:
        """Builds Helm when it is missing (or just finds it); returns it and the seconds that took."""
        binary, seconds = toolbuild.ensure("helm")
        return cls(binary, home), seconds

    def run(
        self, *args: str, kubeconfig: str | None = None, check: bool = True, timeout: float = 300.0
    ) -> subprocess.CompletedProcess[str]:
        env = {**self.env, "KUBECONFIG": kubeconfig} if kubeconfig else self.env
        result = subprocess.run(
            [str(self.binary), *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    def template(
        self,
        chart: str,
        values: Mapping[str, Any] | None = None,
        *,
        release: str = "kuberay-operator",
        namespace: str = "ray-system",
        include_crds: bool = False,
    ) -> list[dict[str, Any]]:
        """`helm template` of a chart under helm-chart/ with these values (as a values file); the objects."""
        args = ["template", release, str(CHARTS / chart), "--namespace", namespace]
        if include_crds:
            args.append("--include-crds")
        # Values go through a file (not --set), so that nested lists and maps keep their types.
        values_file = self._values_file(values or {})
        rendered = self.run(*args, "--values", str(values_file)).stdout
        return [doc for doc in yaml.load_all(rendered, Loader=yaml.CSafeLoader) if doc]

    def render_error(self, chart: str, values: Mapping[str, Any]) -> str:
        """`helm template` that must fail: its error message."""
        values_file = self._values_file(values)
        result = self.run("template", "x", str(CHARTS / chart), "--values", str(values_file), check=False)
        assert result.returncode != 0, f"rendered with {values}"
        return result.stderr

    def _values_file(self, values: Mapping[str, Any]) -> Path:
        directory = Path(self.env["HELM_CACHE_HOME"]).parent / "values"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"values-{time.monotonic_ns()}.yaml"
        path.write_text(yaml.safe_dump(dict(values)))
        return path
