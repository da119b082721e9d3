"""`python -m kuberay`: the same as the `kuberay` command."""

from kuberay.cli import main

main()
