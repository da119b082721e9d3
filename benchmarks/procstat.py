"""One process's line of /proc/<pid>/stat, read the way both the scale benchmark and suite_cpu need it.

Standard library only: `suite_cpu` runs before the project's virtualenv exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcStat:
    name: str  # the kernel's short name, in parentheses as /proc shows it
    cpu_seconds: float  # user + system time
    start_ticks: int  # when it started, in clock ticks after boot: with the pid, it names one process


def read_stat(pid: int | str) -> ProcStat:
    """Raises OSError when the process is gone, ValueError or IndexError when the line is cut short."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    name_end = stat.rindex(")") + 1
    # The fields after the name, counted from state (field 3 of proc(5)): utime 14, stime 15, starttime 22.
    fields = stat[name_end + 1 :].split()
    return ProcStat(
        name=stat[stat.index("(") : name_end],
        cpu_seconds=(int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND,
        start_ticks=int(fields[19]),
    )
