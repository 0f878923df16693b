"""TLS for the spot webhook: minting a CA and a serving certificate (`placement webhook certs`,
for clusters without cert-manager) and a server context that picks up rotated files.

The API server calls webhooks over HTTPS only, checks the serving certificate against the
`caBundle` of the MutatingWebhookConfiguration, and for a `clientConfig.service` expects the
name `<service>.<namespace>.svc` in the certificate's subjectAltNames. cert-manager rotates the
files of the mounted Secret in place; `ReloadingContext.reload_if_changed` loads the new pair
into the same `ssl.SSLContext`, so new handshakes use it without a restart.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertBundle", "ReloadingContext", "mint", "service_names", "write_bundle"]

log = logging.getLogger(__name__)

CA_FILE, CERT_FILE, KEY_FILE = "ca.crt", "tls.crt", "tls.key"  # a kubernetes.io/tls Secret's


@dataclass(frozen=True)
class CertBundle:
    """PEM bytes: the CA certificate (the caBundle), the serving certificate and its key."""

    ca: bytes
    cert: bytes
    key: bytes


def service_names(service: str, namespace: str) -> list[str]:
    """The DNS names a Service is reached by inside the cluster, most specific last."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def mint(
    names: list[str],
    *,
    days: int = 365,
    now: dt.datetime | None = None,
    ca_name: str = "spot-webhook-ca",
) -> CertBundle:
    """A fresh CA and a serving certificate for `names` (DNS names or IP addresses)."""
    start = (now or dt.datetime.now(dt.UTC)) - dt.timedelta(minutes=5)  # clock skew
    end = start + dt.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name(ca_name))
        .issuer_name(_name(ca_name))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = []
    for name in names:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt_names.append(x509.DNSName(name))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(names[0] if names else "spot-webhook"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return CertBundle(
        ca=ca_cert.public_bytes(serialization.Encoding.PEM),
        cert=cert.public_bytes(serialization.Encoding.PEM),
        key=_pem(key),
    )


def write_bundle(bundle: CertBundle, out: Path) -> dict[str, Path]:
    """Write `ca.crt`, `tls.crt` and `tls.key` (0600) into `out`; their paths back."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"ca": out / CA_FILE, "cert": out / CERT_FILE, "key": out / KEY_FILE}
    paths["ca"].write_bytes(bundle.ca)
    paths["cert"].write_bytes(bundle.cert)
    fd = os.open(paths["key"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(bundle.key)
    return paths


class ReloadingContext:
    """A server-side SSLContext whose certificate and key are reloaded when their files
    change (checked by size and mtime: cert-manager replaces the Secret's files in place)."""

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.reloads = 0
        self._seen: tuple[tuple[int, int], ...] = ()
        self.reload_if_changed()

    def _stamp(self) -> tuple[tuple[int, int], ...]:
        stats = (self.cert_file.stat(), self.key_file.stat())
        return tuple((s.st_mtime_ns, s.st_size) for s in stats)

    def reload_if_changed(self) -> bool:
        """Load the pair if the files changed since the last load; True if it did. A pair that
        does not load (a rotation half written) keeps the old one until the next check."""
        try:
            stamp = self._stamp()
        except OSError as exc:
            if not self._seen:
                raise
            log.warning("webhook certificate unreadable, keeping the current one: %s", exc)
            return False
        if stamp == self._seen:
            return False
        try:
            self.context.load_cert_chain(self.cert_file, self.key_file)
        except (ssl.SSLError, OSError):
            if not self._seen:
                raise
            log.warning("webhook certificate does not load yet, keeping the current one")
            return False
        self._seen = stamp
        self.reloads += 1
        if self.reloads > 1:
            log.info("webhook certificate reloaded from %s", self.cert_file)
        return True
