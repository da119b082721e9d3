"""The History Server: the Ray dashboard of clusters that are gone.

Two processes share this package: the collector (`kuberay-history-collector`, the `ray-history-collector`
sidecar the operator injects) uploads each Ray node's logs, Ray's exported events and snapshots of the head's
dashboard API to object storage; the server (`kuberay-history-server`) answers the Ray dashboard's API for
stored sessions from that storage alone. `layout` says where things are stored (upstream's keys), `storage`
and `s3` are the backends. The package sits beside the operator: it imports `api`, `builders` and
`runtime`, never a controller.
"""
