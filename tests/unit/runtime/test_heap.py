"""Where glibc puts a large block once one was freed: on the heap by default, in a mapping of its own once the
threshold is pinned, as the operator does at start. Each case runs in a fresh interpreter (the threshold is
per process and cannot be unset)."""

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")

# Frees a 4 MB block (glibc then raises its thresholds to its size and twice that) and prints where a 2 MB
# block made after it lies: "heap" or "mapping".
PROBE = """
def placed(obj):
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[heap]"):
            low, high = (int(v, 16) for v in line.split()[0].split("-"))
            return "heap" if low <= id(obj) < high else "mapping"
    return "mapping"
freed = bytes(4_000_000)
del freed
print(placed(bytes(2_000_000)))
"""


def placement(setup: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", setup + PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.split()[-1]


def test_without_the_pin_a_freed_large_block_moves_later_ones_onto_the_heap():
    assert placement("") == "heap"


def test_pinned_threshold_keeps_large_blocks_in_their_own_mappings():
    assert placement("from kuberay.runtime import heap\nassert heap.pin_thresholds()\n") == "mapping"


def test_the_operator_pins_it_at_start(tmp_path):
    # No kubeconfig: the operator stops at its connection, after its process-wide settings.
    setup = (
        "from kuberay.operator.main import run\n"
        f"assert run(['--kubeconfig', {str(tmp_path / 'absent')!r}], []) == 1\n"
    )
    assert placement(setup) == "mapping"
