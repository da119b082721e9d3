"""Where the shared reference material lives: `shared/` beside the repository (as on developers' machines
and in CI), holding upstream's sample manifests and generated CRDs."""

import functools
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


@functools.cache
def upstream_crd(file_name: str) -> dict[str, Any]:
    """Upstream's CRD of that file name (`ray.io_rayclusters.yaml`), read once per process and shared, not to
    be changed: the four are 4 MB of YAML, a second or two to read, which several unit test files need."""
    (crd,) = yaml_documents(UPSTREAM_CRDS / file_name)
    assert isinstance(crd, dict)
    return crd
