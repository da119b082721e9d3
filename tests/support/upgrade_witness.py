"""What a client sending requests through a RayService's upgrade saw, and the zero-downtime checks on it:
every request answered 200, the old application's answers first, the new one's last, and once the new
cluster answered the old one never did again (the serve Service moved once)."""

from __future__ import annotations

import httpx


class UpgradeWitness:
    def __init__(self) -> None:
        self.answers: list[str] = []
        self.failures: list[str] = []

    def saw(self, response: httpx.Response) -> None:
        if response.status_code == 200:
            self.answers.append(response.text)
        else:
            self.failures.append(f"{response.status_code} {response.text}")

    def failed(self, error: httpx.HTTPError) -> None:
        self.failures.append(repr(error))

    def assert_moved_once(self, old: str, new: str) -> None:
        assert self.failures == [], self.failures[:5]
        assert self.answers and self.answers[0] == old and self.answers[-1] == new, (
            self.answers[:3],
            self.answers[-3:],
        )
        assert old not in self.answers[self.answers.index(new) :]
        assert set(self.answers) == {old, new}, set(self.answers)
