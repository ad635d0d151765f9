"""Key, certificate and trust-schema files: the file side of `icnd.security` and `icnd.trust`.

`icnd.trust` is sans-IO: it parses certificates and schemas from bytes and
takes the time from its caller.  Reading and writing the files is done
here, for everything that has them on disk: the client (``connect(...,
cert=..., trust=...)``), the CLI (``--cert``, ``--trust``, ``icnd cert``)
and the daemon (``cert``, ``trust`` in its config).
"""

from __future__ import annotations

import os
import tomllib

from icnd.codec import encode
from icnd.security import Ed25519Key, KeyFileError
from icnd.trust.cert import MAX_CERT_FILE, Certificate, certificate_from_bytes
from icnd.trust.schema import Schema, SchemaError

__all__ = ["load_certificate", "load_key", "load_schema", "save_certificate"]

MAX_KEY_FILE = 65536  # a key file is ~100 bytes; only this much is read


def load_key(path: str | os.PathLike[str]) -> Ed25519Key:
    """An Ed25519 key file (``icnd keygen``); KeyFileError (or OSError) naming it."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        buf = f.read(MAX_KEY_FILE)
    try:
        return Ed25519Key.from_bytes(buf)
    except KeyFileError as exc:
        raise KeyFileError(f"{path}: {exc}") from None


def load_certificate(path: str | os.PathLike[str]) -> Certificate:
    """Read a certificate file; CertificateError (or OSError) naming the file."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        buf = f.read(MAX_CERT_FILE + 1)
    return certificate_from_bytes(buf, path)


def save_certificate(cert: Certificate, path: str | os.PathLike[str]) -> None:
    """Write `cert` to `path` (atomically: a temporary file renamed)."""
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(encode(cert.data))
    os.replace(tmp, path)


def load_schema(path: str | os.PathLike[str]) -> Schema:
    """Load a trust schema file and the anchor certificate files it names
    (relative to the schema's directory); SchemaError naming the file, the
    rule and the problem."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as exc:
        raise SchemaError(f"{path}: cannot read the trust schema: {exc.strerror or exc}") from None
    try:
        doc = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SchemaError(f"{path}: not a TOML trust schema: {exc}") from None
    base_dir = os.path.dirname(os.path.abspath(path))
    return Schema.from_dict(doc, path, lambda entry: load_certificate(os.path.join(base_dir, entry)))
