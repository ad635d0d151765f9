"""The one round-trip-time estimator (RFC 6298), for every layer that times out a request.

`RttEstimator` keeps SRTT and RTTVAR from the samples it is given and an RTO
of SRTT + 4·RTTVAR, clamped to ``[min_rto, max_rto]`` (``initial_rto``
before the first sample), with exponential backoff on top for callers that
retransmit on one timer.  It is plain arithmetic with no clock: the caller
measures each round trip and feeds it in, and follows Karn's rule (no
samples from retransmitted requests).  Users: the object consumer
(`icnd.objects.fetch`, one per fetch) and the aggregator
(`icnd.reduction.aggregate`, one per next hop).
"""

from __future__ import annotations

__all__ = ["RttEstimator"]


class RttEstimator:
    """RFC 6298 retransmission timer: SRTT, RTTVAR, RTO with backoff.

    Samples come only from requests answered on their first transmission
    (Karn's rule: the caller does not feed retransmitted ones)."""

    __slots__ = ("srtt", "rttvar", "rto", "min_rto", "max_rto", "_backoff")

    def __init__(self, initial_rto: float = 1.0, min_rto: float = 0.2, max_rto: float = 10.0) -> None:
        self.srtt: float | None = None
        self.rttvar = 0.0
        self.rto = initial_rto
        self.min_rto, self.max_rto = min_rto, max_rto
        self._backoff = 1

    def sample(self, rtt: float) -> None:
        """A measured round trip: SRTT, RTTVAR and the RTO move (RFC 6298 §2), and any backoff ends."""
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        self._backoff = 1
        self.rto = min(max(self.srtt + 4 * self.rttvar, self.min_rto), self.max_rto)

    def timeout(self) -> float:
        """The current RTO, including any backoff."""
        return min(self.rto * self._backoff, self.max_rto)

    def back_off(self) -> None:
        self._backoff = min(self._backoff * 2, 64)

    def reset_backoff(self) -> None:
        """An answer arrived (even to a retransmission): the path works again."""
        self._backoff = 1
