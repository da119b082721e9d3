"""The collector (`kuberay-history-collector`): one per Ray pod, beside the Ray container, sharing its
/tmp/ray. `settings` reads who it is from its env, `node` finds the Ray session and node it serves,
`logsync` uploads the logs, `events` receives Ray's exported events, `snapshots` keeps the head's dashboard
answers, and `main` runs them and flushes on SIGTERM.
"""
