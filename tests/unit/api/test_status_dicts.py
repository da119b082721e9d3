"""The TypedDicts the controllers read and write statuses through hold the same keys, at every level, as
the status models the CRDs are generated from."""

from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel

from kuberay.api.rayjob import RayJobStatus, RayJobStatusDict, RayJobStatusInfo, RayJobStatusInfoDict
from kuberay.api.rayservice import RayServiceStatus, RayServiceStatusDict, RayServiceStatuses, ServeSideDict


@pytest.mark.parametrize(
    ("typed", "model"),
    [
        (RayServiceStatusDict, RayServiceStatuses),
        (ServeSideDict, RayServiceStatus),
        (RayJobStatusDict, RayJobStatus),
        (RayJobStatusInfoDict, RayJobStatusInfo),
    ],
)
def test_the_typed_keys_are_the_models_keys(typed: type, model: type[BaseModel]) -> None:
    aliases = {field.alias or name for name, field in model.model_fields.items()}
    assert set(typing.get_type_hints(typed)) == aliases
