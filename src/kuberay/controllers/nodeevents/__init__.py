"""The node event forwarder (upstream v1.8's, kuberay#4978): selected Node Events re-emitted on the
RayClusters whose pods run on that Node."""
