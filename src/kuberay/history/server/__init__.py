"""The History Server (`kuberay-history-server`): Ray's dashboard API for stored sessions. `catalog` finds
sessions and loads what a request needs, lazily, through `cache` (bounded in bytes); `logs` lists and reads
stored log files; `stateapi` filters stored state-API answers as Ray's dashboard does; `auth` is the token;
`app` has the routes; `main` the process."""
