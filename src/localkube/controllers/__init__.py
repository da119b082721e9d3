"""Controllers that run inside localkube: scheduling, garbage collection, namespaces, Jobs, endpoints."""
