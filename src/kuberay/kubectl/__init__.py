"""The `kubectl ray` plugin (the `kubectl-ray` executable): upstream KubeRay's `kubectl-plugin` commands, flags,
tables and messages, so scripts and habits carry over.

`cli` wires the commands; each command's work lives in a module named for it (`get`, `create`, `delete`,
`scale`, `session`, `version`); `kube` is the connection (kubectl's config flags, errors worded for users),
`printer` kubectl's table and YAML output, `generation` the pure RayCluster builder behind `create cluster`.
"""
