"""The deadline rule shared by approval gates and signal waits (GATE-002, WAIT-005, WAIT-055).

Every time in a run record is kept to the millisecond, deadlines included, so that any
implementation compares the same instants: `openedAt` is the opening time cut to the millisecond,
and the deadline is `openedAt` + the timeout rounded up to a whole millisecond (a timeout of
0.0005 s gives `openedAt` + 1 ms). The timeout is read as the decimal number it was written as,
not as its binary float (59.999 s is 59 999 ms, never 60 000).
"""

from __future__ import annotations

import datetime as dt
import math
from fractions import Fraction


def timeout_in_ms(timeout: float) -> int:
    """Seconds as written, in whole milliseconds, a fraction of a millisecond rounded up."""
    return math.ceil(Fraction(repr(timeout)) * 1000)


def deadline_after(opened: dt.datetime, timeout: float) -> dt.datetime:
    """`opened` (already cut to the millisecond) plus the timeout kept to the millisecond."""
    return opened + dt.timedelta(milliseconds=timeout_in_ms(timeout))
