"""The access service's settings and the places of its generated files, from ``[access]``.

Why one place: pywb, our WARC resolver, the index builder, the DAG tasks and ``harvestflow
services status`` must agree on where pywb's configuration, the indexes and the logs live. The
gateway on ``[access] url`` is the one public address; pywb, the resolver and the search page
listen on loopback only behind it. Replay has a site of its own, never the curator pages'
(``[access] curator_url``: told, never read from the top layer's ``[airflow]`` section).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harvestflow.formats.domains import is_ip, registrable_domain
from harvestflow.settings import Settings, SettingsError, base_dir, get_settings

ALL = "all"
DEFINITION_PREFIX = "harvest-"  # harvest-<id>: one collection per harvest definition
COLL_NAME = _COLL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# pywb, the WARC resolver and the search page: loopback only, whatever the gateway's address
# (they run on the gateway's machine, started by the same process; nothing else may reach them)
INTERNAL_HOST = "127.0.0.1"


@dataclass(frozen=True)
class AccessConfig:
    """``[access]`` resolved: addresses, the pywb virtualenv and the generated files' paths::

    <data_dir>/<access>/config.yaml                 pywb's configuration (generated)
    <data_dir>/<access>/zipnum/<coll>/<coll>.idx    ZipNum summary (+ .loc, shards *.cdxj.gz)
    <data_dir>/<access>/recent/<coll>/*.cdxj        links to index files not yet in the ZipNum
    <data_dir>/<access>/compact/<coll>/             those files compacted (access/compact.py)
    <data_dir>/<access>/logs/access.log             pywb's request log (and its errors)
    <data_dir>/<access>/logs/refused.log            every refusal, with the rule or reason
    <data_dir>/<access>/acl/rules.aclj              pywb's ACL file, from the access rules
    <data_dir>/<access>/colls/harvest-<id>/         a definition's collection (pywb auto-coll)
    <data_dir>/<access>/templates/index.html        the home page with the guided tours

    ``url`` is the replay site as browsers see it (every link into replay is made from it);
    ``host``/``port`` are where the gateway listens.
    """

    url: str
    host: str
    port: int
    resolver_port: int
    venv: Path
    root: Path
    block_lines: int
    shard_blocks: int
    max_blocks: int
    compact_min_files: int
    refresh_interval_s: float
    pywb_port: int
    reading_room: bool
    reading_room_ranges: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    reading_room_login: bool
    login_check_url: str
    curator_host: str  # the curator pages' (Airflow's) host: never the replay site's
    # a request to the gateway, as a production reverse proxy limits it (nginx's defaults:
    # client_max_body_size 1m, client_header/body_timeout 60s): [access] max_body_bytes,
    # client_timeout_s (the whole request must arrive within it; a reply, each write)
    max_body_bytes: int = 1 << 20
    client_timeout_s: float = 60.0
    # reading-room sign-in from a browser (access/readerpass.py): the curator pages' page that
    # issues a pass ([access] signin_url; Airflow's site), and how long the gateway's reader
    # session lasts ([access] reader_session_s)
    signin_url: str = ""
    reader_session_s: float = 8 * 3600.0
    # the access rule each licence status puts in force on its targets' seeds
    # ([access] licence_rules; access/licences.py): (status, policy) pairs
    licence_rules: tuple[tuple[str, str], ...] = (("granted", "open"),)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> AccessConfig:
        settings = settings or get_settings()
        sec = settings.data.get("access") or {}
        url = str(sec.get("url") or "http://127.0.0.1:8090/")
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise SettingsError(f"[access] url: want http://HOST:PORT/, got {url!r}")
        venv = Path(str(sec.get("venv") or ".replay-venv"))
        ranges = []
        given = sec.get("reading_room_ranges") or []
        for value in given.split(",") if isinstance(given, str) else given:
            try:
                ranges.append(ipaddress.ip_network(str(value), strict=False))
            except ValueError as exc:
                raise SettingsError(f"[access] reading_room_ranges: {value!r}: {exc}") from exc
        curator_url = str(sec.get("curator_url") or "")
        curator = urlsplit(curator_url)
        if curator.scheme not in ("http", "https") or not curator.hostname:
            raise SettingsError(
                f"[access] curator_url: want the curator pages' http(s)://HOST:PORT/curator/,"
                f" got {curator_url!r}"
            )
        curator_url = curator_url.rstrip("/") + "/"
        return cls(
            url=replay_site(url, str(sec.get("site_url") or ""), curator.hostname),
            host=parts.hostname,
            port=parts.port,
            resolver_port=int(sec.get("resolver_port", 8091)),
            venv=venv if venv.is_absolute() else base_dir() / venv,
            root=settings.path(str(sec.get("data_subdir") or "access")),
            block_lines=max(1, int(sec.get("zipnum_block_lines", 100))),
            shard_blocks=max(1, int(sec.get("zipnum_shard_blocks", 100000))),
            max_blocks=max(1, int(sec.get("zipnum_max_blocks", 300))),
            compact_min_files=int(sec.get("compact_min_files", 32)),
            refresh_interval_s=float(sec.get("refresh_interval_s", 30)),
            pywb_port=int(sec.get("pywb_port", 8092)),
            reading_room=_flag(sec.get("reading_room", False), "reading_room"),
            reading_room_ranges=tuple(ranges),
            reading_room_login=_flag(sec.get("reading_room_login", True), "reading_room_login"),
            # the curator pages' own authentication (Airflow's login) answers for a token
            login_check_url=str(sec.get("login_check_url") or curator_url),
            curator_host=curator.hostname,
            max_body_bytes=_positive(sec.get("max_body_bytes", 1 << 20), "max_body_bytes", int),
            client_timeout_s=_positive(sec.get("client_timeout_s", 60), "client_timeout_s", float),
            signin_url=str(sec.get("signin_url") or curator_url + "reading-room"),
            reader_session_s=_positive(
                sec.get("reader_session_s", 8 * 3600), "reader_session_s", float
            ),
            licence_rules=_licence_rules(sec.get("licence_rules", ["granted=open"])),
        )

    @property
    def wayback(self) -> Path:
        """pywb's replay server program in its own virtualenv."""
        return self.venv / "bin" / "wayback"

    def on_curator_site(self, host_header: str | None) -> bool:
        """Whether a request's ``Host`` names the curator pages' site (the gateway's own
        loopback address typed or linked): the gateway sends it to the replay site rather than
        run an archived page's scripts where the curator's cookies are sent."""
        name = urlsplit(f"//{host_header or ''}").hostname or ""
        return bool(name) and _same_site(name, self.curator_host)

    @property
    def listen_url(self) -> str:
        """The gateway's own address (``[access] url``), for health checks."""
        return f"http://{self.host}:{self.port}/"

    @property
    def resolver_url(self) -> str:
        return f"http://{INTERNAL_HOST}:{self.resolver_port}/warc/"

    @property
    def pywb_url(self) -> str:
        """pywb itself, behind the gateway, on loopback."""
        return f"http://{INTERNAL_HOST}:{self.pywb_port}/"

    @property
    def refused_log(self) -> Path:
        return self.log_dir / "refused.log"

    @property
    def config_file(self) -> Path:
        return self.root / "config.yaml"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    @property
    def access_log(self) -> Path:
        return self.log_dir / "access.log"

    def zipnum_dir(self, coll: str) -> Path:
        return self.root / "zipnum" / _checked(coll)

    def summary(self, coll: str) -> Path:
        return self.zipnum_dir(coll) / f"{coll}.idx"

    def compact_dir(self, coll: str) -> Path:
        return self.root / "compact" / _checked(coll)

    def recent_dir(self, coll: str) -> Path:
        return self.root / "recent" / _checked(coll)

    def replay_url(self, coll: str, timestamp: str, url: str, modifier: str = "") -> str:
        return f"{self.url}{coll}/{timestamp}{modifier}/{url}"


def replay_site(url: str, site_url: str, curator_host: str) -> str:
    """The replay site's URL: ``site_url`` when given, else the gateway's ``url``, moved to the
    other loopback name when it is on the curator pages' host ``curator_host``.

    Why refuse rather than warn: on one site, an archived page's script is sent the curator's
    cookies and can act as the curator; on one host (cookies are bound to the host, not the
    port) it can even read Airflow's ``_token``, which Airflow 3.3.2's login page sets from
    JavaScript (not HttpOnly). Sub-domains of one registrable domain are one site too.
    """
    if site_url:
        parts = urlsplit(site_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SettingsError(f"[access] site_url: want http(s)://HOST[:PORT]/, got {site_url!r}")
        if _same_site(parts.hostname, curator_host):
            raise SettingsError(
                f"[access] site_url {site_url!r} is on the site of the curator pages"
                f" ([access] curator_url's host {curator_host!r}): replay needs a domain of its own"
            )
        return site_url.rstrip("/") + "/"
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not _same_site(host, curator_host):
        return url.rstrip("/") + "/"
    if host == "localhost":
        other = "127.0.0.1"
    elif is_ip(host) and ipaddress.ip_address(host).is_loopback:
        other = "localhost"
    else:
        raise SettingsError(
            f"[access] url {url!r} is on the host of the curator pages ([access] curator_url's"
            f" host {curator_host!r}): set [access] site_url to the replay site's own domain"
        )
    return f"{parts.scheme}://{other}:{parts.port}/"


def _same_site(host: str, other: str) -> bool:
    """Whether a browser takes the two hosts for one site (same registrable domain)."""
    return registrable_domain(host.lower()) == registrable_domain(other.lower())


def _positive(value: object, name: str, kind: type[int] | type[float]) -> Any:
    """A positive number setting (``kind``), or a SettingsError naming it."""
    try:
        number = kind(str(value).strip())
    except ValueError:
        number = 0
    if not number > 0:
        raise SettingsError(f"[access] {name}: want a positive number, got {value!r}")
    return number


def _flag(value: object, name: str) -> bool:
    """A boolean setting (TOML bool, or the strings an environment variable carries)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise SettingsError(f"[access] {name}: want true or false, got {value!r}")


def _checked(coll: str) -> str:
    if not _COLL.match(coll):
        raise SettingsError(f"bad access collection name {coll!r}")
    return coll


def _licence_rules(value: Any) -> tuple[tuple[str, str], ...]:
    """``[access] licence_rules``: ``"status=policy"`` entries, each checked."""
    from access.rules import POLICIES
    from harvest.selection.annotations import LicenceStatus

    if not isinstance(value, list) or not all(isinstance(v, str) and "=" in v for v in value):
        raise SettingsError(f'[access] licence_rules: want ["status=policy", …], got {value!r}')
    pairs = dict(v.split("=", 1) for v in value)
    for status, policy in pairs.items():
        if status not in LicenceStatus.__members__.values():
            raise SettingsError(
                f"[access] licence_rules: unknown licence status {status!r}; expected one of"
                f" {', '.join(LicenceStatus)}"
            )
        if policy not in POLICIES:
            raise SettingsError(
                f"[access] licence_rules.{status}: policy {policy!r}; want one of"
                f" {', '.join(POLICIES)}"
            )
    return tuple(sorted((str(k), str(v)) for k, v in pairs.items()))
