"""Where the shared reference material lives: `shared/` beside the repository (as on developers' machines
and in CI), holding upstream's sample manifests and generated CRDs."""

from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
UPSTREAM_SAMPLES = SHARED / "upstream-samples"
UPSTREAM_CRDS = SHARED / "upstream-crds"
