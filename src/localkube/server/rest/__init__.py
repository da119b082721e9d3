"""The REST verbs over stored objects, with the API server's object semantics, split by verb as kine splits
its server.

`Resources` turns get/list/create/update/patch/delete/deletecollection on a `ResourceType` into store
operations, applying what a real API server applies on the way; each verb's module says what:
`read` (get, list), `create`, `update` (update, patch), `delete` (delete, deletecollection), on `common`
(the shared base: admission, namespaces, serving forms; and helpers). Everywhere, dryRun=All runs all of
it and stores nothing, and fieldValidation=Strict refuses unknown fields (400, `strict decoding error:
unknown field "spec.x"`), which custom resources otherwise lose to pruning; by default (Warn) a custom
resource's pruned fields are named in the reply's Warning headers.

Every verb is synchronous and runs to completion on the event loop without awaiting, so a read and the
write that depends on it cannot interleave with another request: patches need no retry loop.
Callers import `Resources` and the helpers below from here.
"""

from __future__ import annotations

from localkube.server.rest.common import SYSTEM_NAMESPACES as SYSTEM_NAMESPACES
from localkube.server.rest.common import Query as Query
from localkube.server.rest.common import clone as clone
from localkube.server.rest.common import now as now
from localkube.server.rest.common import parse_resource_version as parse_resource_version
from localkube.server.rest.update import Updates


class Resources(Updates):
    """The REST verbs. Each verb's module adds its verbs onto the previous one's, in the order they build
    on each other: read, create (seeding uses it), delete (deletecollection lists), update and patch (an
    update that removes the last finalizer deletes; server-side apply may create)."""
