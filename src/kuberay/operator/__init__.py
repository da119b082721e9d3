"""The kuberay-operator process: flags and config file, feature gates, logging, metrics and health servers, wiring."""
