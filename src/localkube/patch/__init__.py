"""Patch engines of localkube: JSON patch, merge patch, strategic merge patch and server-side apply.

Pure functions over JSON-shaped dicts; none mutates its inputs. Errors are `PatchError` (with the API
server's `Status`) and, for apply, `ApplyConflict` (409).
"""

from localkube.patch.apply import record_update, server_side_apply
from localkube.patch.errors import ApplyConflict, PatchError
from localkube.patch.json_patch import json_patch, merge_patch
from localkube.patch.strategic import strategic_merge_patch

__all__ = [
    "ApplyConflict",
    "PatchError",
    "json_patch",
    "merge_patch",
    "record_update",
    "server_side_apply",
    "strategic_merge_patch",
]
