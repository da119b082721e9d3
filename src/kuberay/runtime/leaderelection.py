"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm and defaults.

- A candidate takes the lease when it does not exist, is held by nobody, or its record has not changed for
  `lease_duration` as measured on the candidate's own clock since it last saw a change (so clock skew
  between machines does not matter). Writes go through resourceVersion preconditions: of two candidates
  racing for the lease, one gets a Conflict and stays a follower.
- The leader renews every `retry_period`; if it cannot renew for `renew_deadline` it has lost leadership,
  and `hold` raises `LeadershipLost` (the process then exits, as controller-runtime does, rather than risk
  two leaders).
- `holds()` is true only while the last successful renewal started less than `renew_deadline` ago on the
  monotonic clock, which runs on while the process is paused: a leader resumed after a SIGSTOP longer than
  that knows at once, before its renewal loop runs, that a successor may lead (writes are fenced on it).
- On a graceful stop the leader releases the lease (empty holder, 1 s duration), so a successor need not
  wait out the lease.
"""

from __future__ import annotations

import logging
import socket
import uuid
from dataclasses import dataclass, field
from typing import Any

from kuberay.runtime import errors
from kuberay.runtime.client import Client
from kuberay.runtime.clock import Clock
from kuberay.runtime.resources import LEASE
from kubesemantics import times

log = logging.getLogger(__name__)


class LeadershipLost(errors.ControllerRuntimeError):
    """The lease could not be renewed within the renew deadline."""


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaderElectionConfig:
    namespace: str
    name: str = "ray-operator-leader"
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError(
                "leader election needs lease-duration > renew-deadline > retry-period > 0, got "
                f"{self.lease_duration} / {self.renew_deadline} / {self.retry_period}"
            )


class LeaderElector:
    def __init__(self, client: Client, config: LeaderElectionConfig, clock: Clock) -> None:
        self.client = client
        self.config = config
        self._clock = clock
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._renewed_at = 0.0
        self.leading = False

    def holds(self) -> bool:
        """Leading, and renewed recently enough that no other candidate can have taken the lease."""
        return self.leading and self._clock.monotonic() - self._renewed_at < self.config.renew_deadline

    async def acquire(self) -> None:
        """Returns once this candidate holds the lease."""
        log.info("attempting to acquire leader lease %s/%s", self.config.namespace, self.config.name)
        while not await self._try_acquire_or_renew():
            await self._clock.sleep(self.config.retry_period)
        self.leading = True
        log.info(
            "successfully acquired lease %s/%s as %s",
            self.config.namespace,
            self.config.name,
            self.config.identity,
        )

    async def hold(self) -> None:
        """Renews the lease until cancelled; raises `LeadershipLost` when renewal fails for too long."""
        while True:
            await self._clock.sleep(self.config.retry_period)
            if not await self._try_acquire_or_renew() and not self.holds():
                self.leading = False
                raise LeadershipLost(f"failed to renew lease {self.config.namespace}/{self.config.name}")

    async def release(self) -> None:
        if not self.leading:
            return
        self.leading = False
        try:
            lease = await self.client.get(LEASE, self.config.name, self.config.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") != self.config.identity:
                return
            now = times.format_micro_time(self._clock.now())
            lease["spec"].update(holderIdentity="", leaseDurationSeconds=1, renewTime=now, acquireTime=now)
            await self.client.update(LEASE, lease)
        except errors.KubeError as e:
            log.warning("failed to release lease %s/%s: %s", self.config.namespace, self.config.name, e)

    async def _try_acquire_or_renew(self) -> bool:
        started = self._clock.monotonic()
        if await self._acquire_or_renew():
            self._renewed_at = started
            return True
        return False

    async def _acquire_or_renew(self) -> bool:
        config = self.config
        now = times.format_micro_time(self._clock.now())
        try:
            lease = await self.client.get(LEASE, config.name, config.namespace)
        except errors.NotFoundError:
            spec: dict[str, Any] = {
                "holderIdentity": config.identity,
                "leaseDurationSeconds": int(config.lease_duration),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            }
            try:
                await self.client.create(
                    LEASE, {"metadata": {"name": config.name, "namespace": config.namespace}, "spec": spec}
                )
            except errors.KubeError as e:
                log.debug("lease create failed: %s", e)
                return False
            self._observe(spec)
            return True
        except errors.KubeError as e:
            log.warning("error retrieving lease %s/%s: %s", config.namespace, config.name, e)
            return False

        spec = dict(lease.get("spec") or {})
        if spec != self._observed_spec:
            self._observe(spec)
        holder = spec.get("holderIdentity") or ""
        expired = self._clock.monotonic() - self._observed_at >= float(
            spec.get("leaseDurationSeconds") or config.lease_duration
        )
        if holder and holder != config.identity and not expired:
            return False
        renewed = dict(
            spec,
            holderIdentity=config.identity,
            leaseDurationSeconds=int(config.lease_duration),
            renewTime=now,
        )
        if holder != config.identity:
            renewed["acquireTime"] = now
            renewed["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        lease["spec"] = renewed
        try:
            await self.client.update(LEASE, lease)
        except errors.KubeError as e:
            log.debug("lease update failed: %s", e)
            return False
        self._observe(renewed)
        return True

    def _observe(self, spec: dict[str, Any]) -> None:
        self._observed_spec = spec
        self._observed_at = self._clock.monotonic()
