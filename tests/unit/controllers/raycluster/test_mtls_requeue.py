"""The mTLS requeue decision: upstream's RayClusterMTLS controller requeues after 30 s while the cluster's
certificates are not Ready and every 60 s once they are."""

from __future__ import annotations

from kuberay.controllers.raycluster import mtls


def test_not_ready_certificates_are_looked_at_again_after_30_seconds() -> None:
    assert mtls.requeue_seconds(False) == 30.0


def test_ready_certificates_are_checked_every_minute() -> None:
    assert mtls.requeue_seconds(True) == 60.0
