"""Golden files: `<case>.input.yaml` beside `<case>.output.yaml`.

`compare(path_to_output, actual)` asserts that `actual` equals the stored YAML. With the environment
variable UPDATE_GOLDEN=1 it writes `actual` instead; review the diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml


def load(path: Path) -> Any:
    with path.open() as f:
        return yaml.safe_load(f)


def cases(directory: Path) -> list[Path]:
    """The `*.input.yaml` files of a directory, sorted, for `pytest.mark.parametrize`."""
    return sorted(directory.glob("*.input.yaml"))


def output_for(input_path: Path) -> Path:
    return input_path.with_name(input_path.name.removesuffix(".input.yaml") + ".output.yaml")


def compare(output_path: Path, actual: Any) -> None:
    if os.environ.get("UPDATE_GOLDEN") == "1":
        output_path.write_text(yaml.safe_dump(actual, sort_keys=False, width=120))
        return
    assert output_path.exists(), f"{output_path} is missing: run with UPDATE_GOLDEN=1 and review it"
    assert actual == load(output_path), f"output differs from {output_path}"
