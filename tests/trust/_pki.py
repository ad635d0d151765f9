"""Keys, certificates and schemas for the trust tests (explicit time)."""

from __future__ import annotations

from pathlib import Path

from icnd.codec import encode
from icnd.keyfiles import save_certificate
from icnd.name import Name
from icnd.packet import Data
from icnd.security import Ed25519Key
from icnd.trust.cert import Certificate, issue, self_signed

T = 1_800_000_000.0  # "now" in every test: 2027-01-15
DAY = 86_400.0


def key(identity: str) -> Ed25519Key:
    return Ed25519Key.generate(Name(identity))


def anchor(identity: str = "/net", *, now: float = T - DAY, days: float = 365) -> tuple[Ed25519Key, Certificate]:
    k = key(identity)
    return k, self_signed(k, now=now, days=days)


def certified(identity: str, issuer: Ed25519Key, *, now: float = T - DAY,
              days: float = 30) -> tuple[Ed25519Key, Certificate]:
    k = key(identity)
    return k, issue(issuer, k, now=now, days=days)


USER_SCHEMA = """\
anchors = ["anchor.cert"]
[[rule]]
name = "user-data"
data = "/net/<user>/<**>"
signer = "/net/<user>/KEY/<*>"
[[rule]]
name = "user-certs"
data = "/net/<user>/KEY/<**>"
signer = "/net/KEY/<*>"
"""


def write_schema(tmp_path: Path, text: str, anchors: dict[str, Certificate | bytes]) -> Path:
    """`text` as tmp_path/schema.toml, with each anchor file written beside it."""
    for file, cert in anchors.items():
        if isinstance(cert, Certificate):
            save_certificate(cert, tmp_path / file)
        else:
            (tmp_path / file).write_bytes(cert)
    path = tmp_path / "schema.toml"
    path.write_text(text)
    return path


def wire(data: Data) -> bytes:
    return encode(data)
