"""``icnd cert self|issue|show`` through the real command line (interface §13)."""

from __future__ import annotations

import json
import subprocess
import time

import trio

from icnd.keyfiles import load_certificate, load_schema, save_certificate
from icnd.security import Ed25519Key, make_data
from icnd.testing.processes import run_cli
from icnd.name import Name
from icnd.trust.cert import self_signed
from icnd.trust.validator import Validator

from ._pki import DAY, USER_SCHEMA


def icnd(*args: str, cwd=None) -> subprocess.CompletedProcess[bytes]:
    return run_cli(*args, cwd=cwd)


def ok(r: subprocess.CompletedProcess[bytes]) -> str:
    assert r.returncode == 0, r.stderr.decode()
    assert r.stderr == b""
    return r.stdout.decode()


def one_line_error(r: subprocess.CompletedProcess[bytes], code: int) -> str:
    text = r.stderr.decode()
    assert r.returncode == code, (r.returncode, text)
    assert "Traceback" not in text, text
    lines = text.splitlines()
    assert len(lines) == 1 and lines[0].startswith("icnd: error: "), text
    return lines[0]


def test_anchor_issue_show_and_validate(tmp_path):
    """The walk-through of docs/security.md, checked end to end."""
    ok(icnd("keygen", "--name", "/net", "--out", "anchor.key", cwd=tmp_path))
    ok(icnd("keygen", "--name", "/net/alice", "--out", "alice.key", cwd=tmp_path))
    before = time.time()
    name = ok(icnd("cert", "self", "--key", "anchor.key", "--out", "anchor.cert", cwd=tmp_path)).strip()
    after = time.time()
    anchor_key = Ed25519Key.from_bytes((tmp_path / "anchor.key").read_bytes())
    anchor = load_certificate(tmp_path / "anchor.cert")
    assert name == anchor.name.to_uri() and anchor.self_signed and anchor.key_name == anchor_key.name
    assert before * 1000 - 1 <= anchor.not_before_ms <= after * 1000 + 1
    assert anchor.not_after_ms - anchor.not_before_ms == 365 * DAY * 1000  # the default

    name = ok(icnd("cert", "issue", "--issuer", "anchor.key", "--key", "alice.key", "--out", "alice.cert",
                   "--days", "30", cwd=tmp_path)).strip()
    alice_key = Ed25519Key.from_bytes((tmp_path / "alice.key").read_bytes())
    alice = load_certificate(tmp_path / "alice.cert")
    assert name == alice.name.to_uri()
    assert alice.key_name == alice_key.name and alice.signer == anchor_key.name and not alice.self_signed
    assert alice.not_after_ms - alice.not_before_ms == 30 * DAY * 1000

    shown = ok(icnd("cert", "show", "alice.cert", cwd=tmp_path))
    assert f"name:       {alice.name}\n" in shown
    assert f"key:        {alice_key.name}\n" in shown
    assert f"issuer:     {anchor_key.name}\n" in shown
    assert f"validity:   {alice.to_json()['not_before']} .. {alice.to_json()['not_after']}\n" in shown
    assert "(self-signed)" in ok(icnd("cert", "show", "anchor.cert", cwd=tmp_path))
    assert json.loads(ok(icnd("cert", "show", "alice.cert", "--json", cwd=tmp_path))) == alice.to_json()

    # the files work with a schema: alice's Data is accepted, with her certificate fetched by name
    (tmp_path / "schema.toml").write_text(USER_SCHEMA)
    validator = Validator(load_schema(tmp_path / "schema.toml"), clock=time.time)

    async def fetch(key_name):
        assert key_name == alice.key_name
        return alice.data

    rule = trio.run(validator.validate, make_data("/net/alice/doc", b"hi", key=alice_key), fetch)
    assert rule == "user-data"


def test_issue_from_a_certificate(tmp_path):
    ok(icnd("keygen", "--name", "/net", "--out", "anchor.key", cwd=tmp_path))
    ok(icnd("keygen", "--name", "/net/node1", "--out", "node1.key", cwd=tmp_path))
    ok(icnd("cert", "self", "--key", "node1.key", "--out", "node1-self.cert", "--days", "1", cwd=tmp_path))
    ok(icnd("cert", "issue", "--issuer", "anchor.key", "--key", "node1-self.cert", "--out", "node1.cert",
            cwd=tmp_path))
    self_cert, cert = load_certificate(tmp_path / "node1-self.cert"), load_certificate(tmp_path / "node1.cert")
    assert cert.key_name == self_cert.key_name and cert.public_key == self_cert.public_key
    assert not cert.self_signed


def test_never_overwrites(tmp_path):
    ok(icnd("keygen", "--name", "/net", "--out", "anchor.key", cwd=tmp_path))
    (tmp_path / "anchor.cert").write_bytes(b"precious")
    r = icnd("cert", "self", "--key", "anchor.key", "--out", "anchor.cert", cwd=tmp_path)
    assert "anchor.cert exists; refusing to overwrite it" in one_line_error(r, 1)  # as keygen does
    r = icnd("cert", "issue", "--issuer", "anchor.key", "--key", "anchor.key", "--out", "anchor.cert", cwd=tmp_path)
    one_line_error(r, 1)
    assert (tmp_path / "anchor.cert").read_bytes() == b"precious"


def test_bad_files_are_usage_errors(tmp_path):
    ok(icnd("keygen", "--name", "/net", "--out", "anchor.key", cwd=tmp_path))
    ok(icnd("cert", "self", "--key", "anchor.key", "--out", "anchor.cert", cwd=tmp_path))
    (tmp_path / "junk").write_bytes(b"\x00junk" * 10)
    cases = [
        (("cert", "show", "anchor.key"), "anchor.key is a key file, not a certificate"),
        (("cert", "show", "junk"), "junk: not a certificate file"),
        (("cert", "show", "missing.cert"), "cannot read missing.cert: No such file or directory"),
        (("cert", "self", "--key", "anchor.cert", "--out", "x.cert"), "anchor.cert is a certificate; a key file"),
        (("cert", "self", "--key", "junk", "--out", "x.cert"), "junk: not an Ed25519 key file"),
        (("cert", "issue", "--issuer", "anchor.cert", "--key", "anchor.key", "--out", "x.cert"),
         "anchor.cert is a certificate"),
        (("cert", "issue", "--issuer", "anchor.key", "--key", "junk", "--out", "x.cert"),
         "junk: neither a key file nor a certificate"),
    ]
    for args, why in cases:
        assert why in one_line_error(icnd(*args, cwd=tmp_path), 2), args
    assert not (tmp_path / "x.cert").exists()


def test_usage(tmp_path):
    for days in ("0", "soon", "nan"):
        r = icnd("cert", "self", "--key", "k", "--out", "o", "--days", days, cwd=tmp_path)
        assert r.returncode == 2 and "argument --days" in r.stderr.decode(), days
    r = icnd("cert", "issue", "--key", "k", "--out", "o", cwd=tmp_path)
    assert r.returncode == 2 and "--issuer" in r.stderr.decode()
    helptext = ok(icnd("cert", "--help"))
    for verb in ("self", "issue", "show"):
        assert verb in helptext


def test_show_flags_certificates_outside_their_validity(tmp_path):
    k = Ed25519Key.generate(Name("/net"))
    save_certificate(self_signed(k, now=time.time() - 10 * DAY, days=1), tmp_path / "old.cert")
    save_certificate(self_signed(k, now=time.time() + 10 * DAY, days=1), tmp_path / "new.cert")
    save_certificate(self_signed(k, now=time.time(), days=1), tmp_path / "now.cert")
    assert "(expired)\n" in ok(icnd("cert", "show", "old.cert", cwd=tmp_path))
    assert "(not yet valid)\n" in ok(icnd("cert", "show", "new.cert", cwd=tmp_path))
    current = ok(icnd("cert", "show", "now.cert", cwd=tmp_path))
    assert "valid)" not in current and "expired" not in current
