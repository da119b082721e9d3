"""The same requests to localkube and to the real kube-apiserver, their normalised responses compared pair by
pair (cases.py). A difference fails the test unless known.py lists it with its reason; the terminal summary
counts the pairs and lists what is left."""

from __future__ import annotations

import pytest

from differential.cases import CASES
from differential.harness import TALLY, Case, Runner, differences, known
from differential.known import KNOWN

pytestmark = pytest.mark.realkube


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_same_responses(case: Case, runners: tuple[Runner, Runner]) -> None:
    local, real = runners
    namespace = f"diff-{case.name}"[:63]
    ours, theirs = local.run(case, namespace), real.run(case, namespace)
    left = []
    for index, (step, a, b) in enumerate(zip(case.steps, ours, theirs, strict=True)):
        if index in case.setup:
            continue
        TALLY.pairs += 1
        for line in differences(a, b):
            where = f"{case.name}/{index} {step.http or 'kubectl ' + ' '.join(step.kubectl)}: {line}"
            (TALLY.known if known(KNOWN, case.name, index, line) else left).append(where)
    TALLY.left += left
    assert not left, "\n".join(left)
