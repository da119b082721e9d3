from pathlib import Path

import pytest

from support import golden
from unit.builders import podcases


@pytest.mark.parametrize(
    "case", golden.cases(podcases.DIRECTORY), ids=lambda p: p.name.removesuffix(".input.yaml")
)
def test_golden(case: Path) -> None:
    golden.compare(golden.output_for(case), podcases.build_all(case))
