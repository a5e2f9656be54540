"""Certificates that make themselves: a CA and the serving certificates it signs, as pure functions.

Volcano's admission init makes a self-signed certificate for its webhook and patches the
caBundle; Caldera does the same for two servers (the admission webhook and the scheduler's
gRPC endpoint for the agents) from one small CA, so that a renewed serving certificate never
changes what clients trust. Everything here is a function of its arguments (the clock
included): `central.certs.command` stores the results in Secrets and decides nothing itself.

Lifetimes: the CA ten years, serving certificates one year, renewed when less than a third of
their life is left (cert-manager's default). Keys are ECDSA P-256: small, fast to make, and
accepted by the API server, gRPC and every current TLS client.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
SERVING_DAYS = 365
CLOCK_SKEW = dt.timedelta(minutes=5)  # notBefore in the past: nodes whose clocks run behind

# Keys of a serving Secret: type kubernetes.io/tls plus the issuing CA, as cert-manager writes it.
CA_CRT, TLS_CRT, TLS_KEY = "ca.crt", "tls.crt", "tls.key"
CA_KEY = "ca.key"  # only in the CA's own Secret


class CertError(ValueError):
    """Stored certificate material that cannot be used; the message says what is wrong."""


@dataclass(frozen=True)
class KeyPair:
    cert_pem: bytes
    key_pem: bytes

    @property
    def cert(self) -> x509.Certificate:
        return load_cert(self.cert_pem, "certificate")


@dataclass(frozen=True)
class ServingRequest:
    """What one server's certificate must cover."""
    common_name: str
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for ip in self.ip_addresses:
            try:
                ipaddress.ip_address(ip)
            except ValueError:
                raise CertError(f"{ip!r} is not an IP address") from None


def service_dns_names(service: str, namespace: str, cluster_domain: str = "cluster.local") -> tuple[str, ...]:
    """Every name a client inside the cluster may use for `service` (the API server uses .svc)."""
    return (service, f"{service}.{namespace}", f"{service}.{namespace}.svc",
            f"{service}.{namespace}.svc.{cluster_domain}")


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def new_ca(common_name: str, now: dt.datetime, days: int = CA_DAYS) -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(_name(common_name))
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW).not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(_cert_pem(cert), _key_pem(key))


def issue_serving(ca: KeyPair, request: ServingRequest, now: dt.datetime, days: int = SERVING_DAYS) -> KeyPair:
    """A server certificate for `request`, signed by `ca`."""
    ca_cert, ca_key = ca.cert, load_key(ca.key_pem, "CA key")
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(d) for d in request.dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in request.ip_addresses]
    builder = (
        x509.CertificateBuilder().subject_name(_name(request.common_name)).issuer_name(ca_cert.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(min(now + dt.timedelta(days=days), ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return KeyPair(_cert_pem(builder.sign(ca_key, hashes.SHA256())), _key_pem(key))


def load_cert(pem: bytes, what: str) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(pem)
    except ValueError:
        raise CertError(f"{what} is not a PEM certificate") from None


def load_key(pem: bytes, what: str) -> ec.EllipticCurvePrivateKey:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        raise CertError(f"{what} is not an unencrypted PEM private key") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertError(f"{what} is not an ECDSA key")
    return key


def renewal_due(cert: x509.Certificate, now: dt.datetime) -> bool:
    """True once less than a third of the certificate's life is left (or it is not yet valid)."""
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return now < start or now >= end - (end - start) / 3


def ca_problem(ca: KeyPair, now: dt.datetime) -> str | None:
    """Why `ca` cannot go on signing, or None."""
    try:
        cert, key = ca.cert, load_key(ca.key_pem, CA_KEY)
    except CertError as err:
        return str(err)
    if cert.public_key() != key.public_key():
        return "ca.key does not belong to ca.crt"
    if renewal_due(cert, now):
        return f"the CA expires {cert.not_valid_after_utc:%Y-%m-%d}"
    return None


def serving_problem(pair: KeyPair, ca_pem: bytes, ca: KeyPair, request: ServingRequest,
                    now: dt.datetime) -> str | None:
    """Why a stored serving certificate must be replaced, or None if it is good to keep.

    It must parse, match its key, be signed by the current CA (and carry that CA as ca.crt,
    which clients trust), cover every requested name, and have a third of its life left."""
    problem = certificate_problem(pair, now)
    if problem:
        return problem
    cert = pair.cert
    if ca_pem.strip() != ca.cert_pem.strip():
        return "ca.crt is not the current CA"
    try:
        cert.verify_directly_issued_by(ca.cert)
    except (ValueError, TypeError, InvalidSignature):
        return "tls.crt is not signed by the current CA"
    missing = sorted(set(request.dns_names) - set(_dns_names(cert))) + \
        sorted({str(ipaddress.ip_address(ip)) for ip in request.ip_addresses} - set(_ips(cert)))
    if missing:
        return "tls.crt does not cover " + ", ".join(missing)
    if renewal_due(cert, now):
        return f"tls.crt expires {cert.not_valid_after_utc:%Y-%m-%d}"
    return None


def _san(cert: x509.Certificate) -> x509.SubjectAlternativeName | None:
    try:
        return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None


def _dns_names(cert: x509.Certificate) -> list[str]:
    san = _san(cert)
    return san.get_values_for_type(x509.DNSName) if san else []


def _ips(cert: x509.Certificate) -> list[str]:
    san = _san(cert)
    return [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] if san else []


def certificate_problem(pair: KeyPair, now: dt.datetime) -> str | None:
    """For a server about to serve `pair`: None if it can, else why not (unparsable, a key that
    does not match, expired, not yet valid). Renewal is `caldera certs`' business; this only
    refuses what clients would refuse."""
    try:
        cert = load_cert(pair.cert_pem, TLS_CRT)
        key = load_key(pair.key_pem, TLS_KEY)
    except CertError as err:
        return str(err)
    if cert.public_key() != key.public_key():
        return "tls.key does not belong to tls.crt"
    if now >= cert.not_valid_after_utc:
        return f"tls.crt expired {cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC"
    if now < cert.not_valid_before_utc:
        return f"tls.crt is not valid before {cert.not_valid_before_utc:%Y-%m-%d %H:%M} UTC"
    return None
