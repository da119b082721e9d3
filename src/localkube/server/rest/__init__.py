"""The REST verbs over stored objects, with the API server's object semantics, split by verb as kine splits
its server.

`Resources` turns get/list/create/update/patch/delete/deletecollection on a `ResourceType` into store
operations, applying what a real API server applies on the way; each verb's module says what:
`read` (get, list), `create`, `update` (update, patch), `delete` (delete, deletecollection), on `common`
(`Core`, what they share: admission, namespaces, serving forms; and helpers). Composed, not inherited:
each verb's object holds the core and the verbs it builds on. Everywhere, dryRun=All runs all of
it and stores nothing, and fieldValidation=Strict refuses unknown fields (400, `strict decoding error:
unknown field "spec.x"`), which custom resources otherwise lose to pruning; by default (Warn) a custom
resource's pruned fields are named in the reply's Warning headers.

Every verb is synchronous and runs to completion on the event loop without awaiting, so a read and the
write that depends on it cannot interleave with another request: patches need no retry loop.
Callers import `Resources` and the helpers below from here.
"""

from __future__ import annotations

from localkube.server.registry import Registry
from localkube.server.rest.common import SYSTEM_NAMESPACES as SYSTEM_NAMESPACES
from localkube.server.rest.common import Core
from localkube.server.rest.common import Query as Query
from localkube.server.rest.common import clone as clone
from localkube.server.rest.common import now as now
from localkube.server.rest.common import parse_resource_version as parse_resource_version
from localkube.server.rest.create import Creates
from localkube.server.rest.delete import Deletes
from localkube.server.rest.read import Reads
from localkube.server.rest.update import Updates
from localkube.storage import Store


class Resources:
    """The REST verbs over one store: each verb's object built on the `Core` they share and on the verbs it
    uses (delete lists; update and patch create, when server-side apply does, and delete, when the last
    finalizer goes)."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self.core = Core(store, registry)
        self.store, self.registry, self.output = store, registry, self.core.output
        reads, creates = Reads(self.core), Creates(self.core)
        deletes = Deletes(self.core, reads)
        updates = Updates(self.core, creates, deletes)
        self.get, self.list_objects = reads.get, reads.list_objects
        self.create, self.seed = creates.create, creates.seed
        self.delete, self.delete_collection = deletes.delete, deletes.delete_collection
        self.finish_terminating_namespace = deletes.finish_terminating_namespace
        self.update, self.patch = updates.update, updates.patch
