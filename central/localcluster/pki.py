"""The local cluster's certificates: one CA, the apiserver's serving certificate, client
certificates for the identities that are not ServiceAccounts, and the ServiceAccount
token signing key. EC P-256 throughout: generation takes milliseconds."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn),
                      *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs)])


def _write(directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pair:
    directory.mkdir(parents=True, exist_ok=True)
    pair = Pair(directory / f"{stem}.crt", directory / f"{stem}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    pair.key.chmod(0o600)
    return pair


def new_ca(directory: Path, cn: str = "caldera-local-ca") -> Pair:
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return _write(directory, "ca", cert, key)


def issue(ca: Pair, directory: Path, stem: str, cn: str, orgs: tuple[str, ...] = (),
          dns: tuple[str, ...] = (), ips: tuple[str, ...] = (), server: bool = False) -> Pair:
    """A leaf certificate signed by `ca`: a server's when `server`, else a client's
    (CN is the user name and O the groups, as the apiserver reads them)."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert.read_bytes())
    ca_key = serialization.load_pem_private_key(ca.key.read_bytes(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):  # `ca` made it (`_key`)
        raise ValueError(f"{ca.key}: not the EC key this module makes")
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(cn, orgs)).issuer_name(ca_cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                                     else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    names = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return _write(directory, stem, builder.sign(ca_key, hashes.SHA256()), key)


def signing_key(directory: Path, stem: str = "sa") -> Pair:
    """The ServiceAccount token key pair: `.key` signs (apiserver, controller-manager),
    `.crt` holds the public key that verifies."""
    key = _key()
    directory.mkdir(parents=True, exist_ok=True)
    pair = Pair(directory / f"{stem}.pub", directory / f"{stem}.key")
    pair.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                           serialization.NoEncryption()))
    pair.key.chmod(0o600)
    pair.cert.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo))
    return pair
