"""The pure certificate logic: what is issued, and when a stored certificate must be replaced."""

from __future__ import annotations

import datetime as dt
import socket
import ssl
import threading

import pytest
from cryptography import x509

from central.certs.issue import (
    CertError,
    KeyPair,
    ServingRequest,
    ca_problem,
    certificate_problem,
    issue_serving,
    new_ca,
    renewal_due,
    service_dns_names,
    serving_problem,
)

NOW = dt.datetime(2026, 11, 24, tzinfo=dt.timezone.utc)
REQUEST = ServingRequest("svc.ns.svc", service_dns_names("svc", "ns"), ("127.0.0.1",))


@pytest.fixture(scope="module")
def ca() -> KeyPair:
    return new_ca("test-ca", NOW)


@pytest.fixture(scope="module")
def serving(ca) -> KeyPair:
    return issue_serving(ca, REQUEST, NOW)


def test_serving_certificate_covers_the_service_names_and_ips(ca, serving):
    cert = serving.cert
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["svc", "svc.ns", "svc.ns.svc", "svc.ns.svc.cluster.local"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    cert.verify_directly_issued_by(ca.cert)
    assert serving_problem(serving, ca.cert_pem, ca, REQUEST, NOW) is None


def test_a_tls_client_trusting_the_ca_accepts_the_server(tmp_path):
    now = dt.datetime.now(dt.timezone.utc)  # the handshake checks validity against the real clock
    ca = new_ca("test-ca", now)
    serving = issue_serving(ca, REQUEST, now)
    (tmp_path / "tls.crt").write_bytes(serving.cert_pem)
    (tmp_path / "tls.key").write_bytes(serving.key_pem)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    client_ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            tls.sendall(b"ok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    with socket.create_connection(("127.0.0.1", port)) as raw:
        with client_ctx.wrap_socket(raw, server_hostname="svc.ns.svc") as tls:
            assert tls.recv(2) == b"ok"
    thread.join(5)
    listener.close()


@pytest.mark.parametrize("days, due", [
    pytest.param(0, False, id="fresh"),
    pytest.param(240, False, id="two-thirds-of-365-days-not-yet"),    # 365*2/3 = 243.3
    pytest.param(244, True, id="last-third"),
    pytest.param(400, True, id="expired"),
])
def test_renewal_in_the_last_third_of_life(serving, days, due):
    assert renewal_due(serving.cert, NOW + dt.timedelta(days=days)) is due
    problem = serving_problem(serving, b"", new_ca("x", NOW), REQUEST, NOW + dt.timedelta(days=days))
    assert problem  # another CA is always a problem, whatever the date


def test_not_yet_valid_is_due(serving):
    assert renewal_due(serving.cert, NOW - dt.timedelta(days=1))


@pytest.mark.parametrize("mutate, reason", [
    pytest.param(lambda p, ca, other: KeyPair(b"garbage", p.key_pem), "not a PEM certificate", id="bad-cert"),
    pytest.param(lambda p, ca, other: KeyPair(p.cert_pem, b"garbage"), "not an unencrypted PEM", id="bad-key"),
    pytest.param(lambda p, ca, other: KeyPair(p.cert_pem, other.key_pem), "does not belong", id="wrong-key"),
    pytest.param(lambda p, ca, other: other, "not signed by the current CA", id="other-ca"),
])
def test_stored_material_that_must_be_replaced(ca, serving, mutate, reason):
    other_ca = new_ca("other", NOW)
    other = issue_serving(other_ca, REQUEST, NOW)
    assert reason in serving_problem(mutate(serving, ca, other), ca.cert_pem, ca, REQUEST, NOW)


def test_stale_ca_crt_and_missing_names_are_problems(ca, serving):
    assert serving_problem(serving, b"old", ca, REQUEST, NOW) == "ca.crt is not the current CA"
    wider = ServingRequest("svc.ns.svc", REQUEST.dns_names + ("svc.example.com",), ("127.0.0.1", "::1"))
    assert serving_problem(serving, ca.cert_pem, ca, wider, NOW) == "tls.crt does not cover svc.example.com, ::1"


def test_serving_certificate_never_outlives_its_ca():
    short_ca = new_ca("short", NOW, days=30)
    pair = issue_serving(short_ca, REQUEST, NOW, days=365)
    assert pair.cert.not_valid_after_utc == short_ca.cert.not_valid_after_utc


def test_ca_problems(ca):
    assert ca_problem(ca, NOW) is None
    assert "expires" in ca_problem(ca, NOW + dt.timedelta(days=3000))
    assert "does not belong" in ca_problem(KeyPair(ca.cert_pem, new_ca("y", NOW).key_pem), NOW)
    assert "not a PEM certificate" in ca_problem(KeyPair(b"", ca.key_pem), NOW)


def test_certificate_problem_for_a_server_about_to_serve(serving):
    assert certificate_problem(serving, NOW) is None
    assert "expired" in certificate_problem(serving, NOW + dt.timedelta(days=366))
    assert "not valid before" in certificate_problem(serving, NOW - dt.timedelta(days=1))


def test_a_bad_ip_address_is_refused():
    with pytest.raises(CertError, match="'localhost' is not an IP address"):
        ServingRequest("x", (), ("localhost",))
