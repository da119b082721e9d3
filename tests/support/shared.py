"""Where the shared reference material lives: `shared/` beside the repository (as on developers' machines
and in CI), holding upstream's sample manifests and generated CRDs."""

from pathlib import Path
from typing import Any

import yaml

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
UPSTREAM_SAMPLES = SHARED / "upstream-samples"
UPSTREAM_CRDS = SHARED / "upstream-crds"


def yaml_documents(path: Path) -> list[Any]:
    """The documents of a YAML file as `yaml.safe_load_all` reads them, by libyaml's parser: several times
    faster, and the samples are read at collection, by every pytest-xdist worker."""
    with path.open() as f:
        return list(yaml.load_all(f, Loader=yaml.CSafeLoader))
