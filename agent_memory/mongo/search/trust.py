"""How far one tenant's keyword matches are trusted, learned from that tenant's own questions.

Whether a keyword match means anything depends on how a user's questions are written, not on
anything one question shows. Where questions repeat the words of what was said (LoCoMo), BM25
is the better ranking; where they say it in other words (datasets/dialogues), a keyword match
is a coincidence ("living" in "living room" for "what do I do for a living?") and fusing it in
costs recall. One question's coverage (how much of its IDF weight the keyword ranking's best
match contains, :meth:`~agent_memory.mongo.search.keywords.Bm25Index.coverage`) cannot tell
the two apart; its mean over many questions can: 0.62 to 0.75 in every LoCoMo conversation,
0.11 to 0.40 in every dialogue (docs/benchmarks.md).

So the plain tier keeps, per tenant, a running mean of that coverage over the tenant's
retrieves where some keyword matched (:class:`TrustLedger`), starting from a prior that counts
as ``prior_weight`` questions and following the last ``horizon`` questions once it has seen
that many, and the spread of the questions around it. The keyword ranking gets the share of its
weight that the mean less ``caution`` standard errors earns (:meth:`KeywordTrust.share`): none
below ``low``, all of it from ``high``, linear in between; the vector ranking gets the rest.
Reading the mean less its uncertainty means trust is earned: a user whose first few questions
happened to repeat their memories' words gets the keyword ranking only once more questions
agree. No label is used: the ledger learns how a user's questions relate to their memories,
never which memory answered.

The ledger is state of one process (a bounded table; the tenant used least recently is
forgotten first): two processes serving one user each learn on their own, and a restarted
process starts from the prior again. The numbers were chosen by cross-validation (``bench
fusion``).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

from agent_memory.checks import check_int, check_number
from agent_memory.errors import InvalidInputError

__all__ = ["KeywordTrust", "TrustLedger", "asks"]

#: The spread assumed before any question: coverage lies in 0..1, so its standard deviation is
#: at most 0.5; a tenant starts as uncertain as that.
_PRIOR_VARIANCE = 0.25


def asks(text: str) -> bool:
    """Whether ``text`` asks something (a question mark, Latin or full-width): the messages an
    agent searches with are also statements and small talk ("we went hiking on Sunday"), whose
    coverage says little about how this user asks for what they stored, so an agent lets only
    its questions teach the ledger."""
    return "?" in text or "\uff1f" in text


@dataclass(frozen=True, slots=True)
class KeywordTrust:
    """The rule that turns a tenant's mean coverage into the keyword ranking's share."""

    #: At or below this mean coverage the keyword ranking gets none of its weight.
    low: float = 0.35
    #: From this mean coverage on it gets all of it.
    high: float = 0.55
    #: The mean a tenant starts from ...
    prior: float = 0.3
    #: ... counted as this many questions.
    prior_weight: float = 3.0
    #: Once a tenant has asked this many questions, the mean follows the most recent ones
    #: (each new question counts 1/horizon), so a change of style is followed.
    horizon: int = 50
    #: How many standard errors below its mean the share is read at: trust is earned by
    #: evidence, so a tenant whose first few questions happened to repeat their memories'
    #: words does not get the keyword ranking before its questions agree (the spread starts
    #: at the widest coverage can have, 0.5). 0: the mean itself.
    caution: float = 1.0

    def __post_init__(self) -> None:
        low = check_number(self.low, "keyword trust low", minimum=0, maximum=1)
        high = check_number(self.high, "keyword trust high", minimum=0, maximum=1)
        if not low < high:
            raise InvalidInputError("keyword trust low must be below high")
        check_number(self.prior, "keyword trust prior", minimum=0, maximum=1)
        check_number(self.prior_weight, "keyword trust prior_weight", minimum=0, maximum=1000)
        check_int(self.horizon, "keyword trust horizon", minimum=1)
        check_number(self.caution, "keyword trust caution", minimum=0, maximum=10)

    def share(self, mean: float) -> float:
        """The share (0 to 1) of the keyword ranking's weight a mean coverage earns."""
        return min(1.0, max(0.0, (mean - self.low) / (self.high - self.low)))

    def describe(self) -> str:
        caution = f" caution {self.caution:g}" if self.caution else ""
        return (
            f"trust {self.low:g}-{self.high:g} prior {self.prior:g}x{self.prior_weight:g}{caution}"
        )


class TrustLedger:
    """Per-tenant running means of coverage, in one process, at most ``capacity`` tenants."""

    def __init__(self, capacity: int = 10_000) -> None:
        check_int(capacity, "capacity", minimum=1)
        self._capacity = capacity
        #: Per tenant: the mean coverage, how many questions it counts (the prior's weight
        #: included), and the variance of the questions' coverage around it.
        self._means: OrderedDict[Hashable, tuple[float, float, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._means)

    def mean(self, key: Hashable, trust: KeywordTrust) -> float:
        """The tenant's current mean (the prior for a tenant not seen yet)."""
        found = self._means.get(key)
        return trust.prior if found is None else found[0]

    def earned(self, key: Hashable, trust: KeywordTrust) -> float:
        """The coverage the tenant's questions have earned: the mean, less ``trust.caution``
        standard errors of it (questions' spread over the questions counted)."""
        mean, seen, variance = self._means.get(
            key, (trust.prior, trust.prior_weight, _PRIOR_VARIANCE)
        )
        if not trust.caution:
            return mean
        counted = max(1.0, min(seen, float(trust.horizon)))
        return mean - trust.caution * math.sqrt(variance / counted)

    def observe(
        self, key: Hashable, coverage: float | None, trust: KeywordTrust, *, learn: bool = True
    ) -> float:
        """Count one more question of ``key`` whose best keyword match has this ``coverage``;
        the keyword share that question gets (the mean including it). ``None`` (no keyword
        matched any memory: "hi", or a question in words no memory has) says nothing about
        keyword matches and is not counted; nor is anything with ``learn`` false (a message
        that asks nothing, see :func:`asks`), which gets the share the mean has earned so far."""
        if coverage is None or not learn:
            return trust.share(self.earned(key, trust))
        coverage = min(1.0, max(0.0, float(coverage)))
        mean, seen, variance = self._means.pop(
            key, (trust.prior, trust.prior_weight, _PRIOR_VARIANCE)
        )
        seen += 1.0
        step = 1.0 / min(seen, float(trust.horizon))
        delta = coverage - mean
        mean += step * delta
        # The same weighting for the spread (exponentially weighted once past the horizon).
        variance = (1.0 - step) * (variance + step * delta * delta)
        self._means[key] = (mean, seen, variance)
        while len(self._means) > self._capacity:
            self._means.popitem(last=False)
        return trust.share(self.earned(key, trust))
