"""`python -m kuberay.operator`: the same as the `kuberay-operator` command."""

from kuberay.operator.main import main

main()
