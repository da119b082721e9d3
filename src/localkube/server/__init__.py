"""localkube's API server: HTTP routes, REST verbs, watch, discovery, OpenAPI, Table output, auth."""
