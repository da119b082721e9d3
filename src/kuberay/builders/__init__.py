"""Pure functions that build every Kubernetes object the operator makes: no I/O, no clock, no globals."""
