"""`kuberay local`: KubeRay on this machine, on localkube.

`launcher` runs `kuberay local up` (localkube and the operator as two child processes); `instance` owns what
one running instance leaves in its data directory (the lock and the state file), which `kuberay local status`
and `kuberay local down` read from another shell.
"""
