"""The per-job certificate authority the rendering proxy uses to see HTTPS requests.

Why: a browser sends an HTTPS request through a proxy as a ``CONNECT`` tunnel; to fetch (and
archive) what it asks for through the crawl, the proxy must end that TLS connection itself,
with a certificate for the host signed by an authority of its own. Each job gets one (kept in
its ``state/`` so a resumed job keeps it, never shared between jobs); the crawl's Chromium is
the only client and is started with ``--ignore-certificate-errors`` (it never talks to a site
directly: the crawl's own fetch is what reaches the site). Keys are EC P-256: generating one
per host takes a millisecond.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_VALID = dt.timedelta(days=30)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common[:64])])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


class JobCA:
    """A CA for one job and the TLS server contexts of the hosts its browser visits."""

    def __init__(self, directory: Path, label: str = "harvestflow crawl") -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        key_file, cert_file = self.dir / "ca.key", self.dir / "ca.pem"
        if key_file.exists() and cert_file.exists():
            loaded = serialization.load_pem_private_key(key_file.read_bytes(), None)
            assert isinstance(loaded, ec.EllipticCurvePrivateKey)
            self.key = loaded
            self.cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
        else:
            self.key = ec.generate_private_key(ec.SECP256R1())
            now = dt.datetime.now(dt.UTC)
            self.cert = (
                x509.CertificateBuilder()
                .subject_name(_name(f"{label} CA"))
                .issuer_name(_name(f"{label} CA"))
                .public_key(self.key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(days=1))
                .not_valid_after(now + 10 * _VALID)
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .sign(self.key, hashes.SHA256())
            )
            key_file.write_bytes(_pem_key(self.key))
            key_file.chmod(0o600)
            cert_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        self._contexts: dict[str, ssl.SSLContext] = {}

    def issue(self, host: str) -> tuple[bytes, bytes]:
        """(certificate chain PEM, key PEM) for ``host`` (a name or an IP address)."""
        key = ec.generate_private_key(ec.SECP256R1())
        try:
            alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            alt = x509.DNSName(host)
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(host))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + _VALID)
            .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        chain = cert.public_bytes(serialization.Encoding.PEM) + self.cert.public_bytes(
            serialization.Encoding.PEM
        )
        return chain, _pem_key(key)

    def server_context(self, host: str) -> ssl.SSLContext:
        """A TLS server context presenting a certificate for ``host`` (HTTP/1.1 only)."""
        host = host.lower().strip("[]")
        ctx = self._contexts.get(host)
        if ctx is None:
            chain, key = self.issue(host)
            safe = "".join(c if c.isalnum() or c in ".-" else "_" for c in host)[:100]
            pem = self.dir / f"host-{safe}.pem"
            pem.write_bytes(chain + key)
            pem.chmod(0o600)
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(pem)
            ctx.set_alpn_protocols(["http/1.1"])
            self._contexts[host] = ctx
        return ctx
