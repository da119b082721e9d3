"""Upstream's Go operator (ray-project/kuberay v1.5.0) as a peer of ours on localkube: installing its binary,
running it with our flags, and the harnesses that compare the two. Measurements only, never tests.

Importing the package puts `tests/` on `sys.path`: the harnesses reuse the suite's localkube process
wrapper and its sample handling instead of copies.
"""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parents[2] / "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
