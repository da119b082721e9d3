"""The suite's helpers: the processes it starts (localkube, the real control plane, the operator, the
APIServer, Ray, the node agent), the clients it drives them with, golden files and the run's report.

`tests/` is on `sys.path` (pyproject's `pythonpath`), so a test imports them as `support.<module>`.
"""
