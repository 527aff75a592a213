"""Per-domain budgets (objects, bytes) and NetarchiveSuite stop reasons.

Why reservations: with several fetches in flight, counting only finished fetches lets a domain
overshoot its object limit by the number of connections. A fetch reserves its object before it
starts and the reservation is released if it fails, so the object limit is exact; the byte
limit, like Heritrix's, stops new fetches once the bytes already fetched reach it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crawler.jobspec import JobSpec
from harvestflow.formats.domains import registrable_domain
from harvestflow.formats.stop_reasons import StopReason

QUOTA_OBJECTS = "Q:groupMaxFetchSuccesses"
QUOTA_BYTES = "Q:groupMaxAllKb"


@dataclass
class DomainState:
    domain: str
    config_id: int | None = None
    objects: int = 0
    bytes: int = 0
    inflight: int = 0
    limits: list[tuple[str, int, int]] = field(default_factory=list)  # (kind, limit, reason)
    stop_reason: int | None = None


class Budgets:
    def __init__(self, spec: JobSpec, totals: dict[str, tuple[int, int]] | None = None) -> None:
        self.spec = spec
        self.job_domains = {d.domain.lower(): d for d in spec.domains}
        self.domains: dict[str, DomainState] = {}
        for name in self.job_domains:
            self._get(name)
        for name, (objects, nbytes) in (totals or {}).items():
            if not name:
                continue
            st = self._get(name)
            st.objects, st.bytes = objects, nbytes

    def domain_for(self, host: str) -> str:
        """The job domain a host belongs to (longest suffix match), else its registrable one."""
        # the host's suffixes, longest first, looked up: a broad crawl's job has thousands of
        # domains and this runs for every URL considered
        host = host.lower()
        labels = host.split(".")
        for i in range(len(labels)):
            name = ".".join(labels[i:])
            if name in self.job_domains:
                return name
        return registrable_domain(host)

    def _get(self, domain: str) -> DomainState:
        st = self.domains.get(domain)
        if st is None:
            st = DomainState(domain)
            conf = self.job_domains.get(domain)
            limits: list[tuple[str, int, int]] = []
            if self.spec.max_objects >= 0:
                limits.append(("objects", self.spec.max_objects, StopReason.OBJECT_LIMIT))
            if self.spec.max_bytes >= 0:
                limits.append(("bytes", self.spec.max_bytes, StopReason.SIZE_LIMIT))
            if conf is not None:
                st.config_id = conf.config_id
                if conf.max_objects >= 0:
                    limits.append(("objects", conf.max_objects, StopReason.CONFIG_OBJECT_LIMIT))
                if conf.max_bytes >= 0:
                    limits.append(("bytes", conf.max_bytes, StopReason.CONFIG_SIZE_LIMIT))
            # the tightest limit of each kind decides (and gives the stop reason)
            limits.sort(key=lambda x: (x[0], x[1]))
            st.limits = limits
            self.domains[domain] = st
        return st

    def limited(self, domain: str) -> bool:
        """Whether a domain has an object or byte limit (without registering it)."""
        if self.spec.max_objects >= 0 or self.spec.max_bytes >= 0:
            return True
        conf = self.job_domains.get(domain)
        return conf is not None and (conf.max_objects >= 0 or conf.max_bytes >= 0)

    def _exhausted(self, st: DomainState, reserving: bool) -> tuple[int, str] | None:
        for kind, limit, reason in st.limits:
            if kind == "objects":
                used = st.objects + (st.inflight if reserving else 0)
                if used >= limit:
                    return reason, QUOTA_OBJECTS
            elif st.bytes >= limit:
                return reason, QUOTA_BYTES
        return None

    def _stop(self, st: DomainState, reason: int) -> None:
        """A fetch was refused: the domain stops with this reason (the first one sticks)."""
        if st.stop_reason is None:
            st.stop_reason = reason

    def blocked(self, domain: str) -> str | None:
        """The quota annotation if the domain can take no more fetches (without reserving)."""
        st = self._get(domain)
        hit = self._exhausted(st, reserving=True)
        if hit:
            self._stop(st, hit[0])
        return hit[1] if hit else None

    def reserve(self, domain: str) -> str | None:
        """Reserve one fetch; returns the quota annotation when the budget is spent."""
        st = self._get(domain)
        hit = self._exhausted(st, reserving=True)
        if hit:
            self._stop(st, hit[0])
            return hit[1]
        st.inflight += 1
        return None

    def release(self, domain: str) -> None:
        st = self._get(domain)
        st.inflight = max(0, st.inflight - 1)

    def commit(self, domain: str, nbytes: int, reserved: bool = True) -> None:
        st = self._get(domain)
        if reserved:
            st.inflight = max(0, st.inflight - 1)
        st.objects += 1
        st.bytes += nbytes

    def add_bytes(self, domain: str, nbytes: int) -> None:
        """Bytes of a fetch that does not count as an object (robots.txt)."""
        st = self._get(domain)
        st.bytes += nbytes

    def set_limits(self, max_objects: int | None = None, max_bytes: int | None = None) -> None:
        """An operator's new per-domain limits for the running job (-1: none).

        They replace the job-level (harvest) limits; a configuration's own limits still apply.
        A domain stopped by the old limit that the new one no longer exhausts may go on (URLs
        already refused with -5003 are not fetched again, as in Heritrix).
        """
        if max_objects is not None:
            self.spec.max_objects = max_objects
        if max_bytes is not None:
            self.spec.max_bytes = max_bytes
        for name, st in list(self.domains.items()):
            del self.domains[name]
            fresh = self._get(name)
            fresh.config_id, fresh.objects, fresh.bytes = st.config_id, st.objects, st.bytes
            fresh.inflight = st.inflight
            if st.stop_reason is not None and self._exhausted(fresh, reserving=False):
                fresh.stop_reason = st.stop_reason
