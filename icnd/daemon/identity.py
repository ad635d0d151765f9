"""A node's identity and trust, loaded at start-up (interface §13).

Its key is ``--key`` (else the data dir's ``identity.key``, else a fresh one,
kept there when there is a data dir), its certificate ``--cert`` (checked to
certify that key; else self-signed), and ``--trust`` a schema for its one
`icnd.trust.Validator`.  Anything unusable is a `StartupError` with a
one-line message; what is usable but suspect (a key named for another node,
a certificate out of its validity, a schema refusing the node's own routing
Data) is a warning in the log.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

from icnd.core.routing.lsdb import record_name
from icnd.daemon.config import NodeConfig
from icnd.daemon.errors import StartupError
from icnd.keyfiles import load_certificate, load_schema
from icnd.name import Name
from icnd.security import Ed25519Key, KeyChain
from icnd.trust import Certificate, Schema, SchemaError, Validator, self_signed
from icnd.trust.cert import CertificateError

log = logging.getLogger("icnd.node")

IDENTITY_FILE = "identity.key"


@dataclass(frozen=True)
class Identity:
    """The node's key, its certificate, and the one validator of every trust decision."""

    key: Ed25519Key
    cert: Certificate
    validator: Validator


def load_identity(config: NodeConfig, name: Name, keychain: KeyChain) -> Identity:
    """The identity of the node `name` configured by `config`; its key joins `keychain`."""
    key = _load_key(config, name)
    keychain.add_signing_key(key)
    cert, schema = _load_trust(config, key)
    validator = Validator(schema, keychain, clock=time.time)  # certificate validity is wall-clock time
    validator.offer([cert])
    _warn_foreign_key(config, name, key)
    return Identity(key, cert, validator)


def _load_key(config: NodeConfig, name: Name) -> Ed25519Key:
    if config.key:
        try:
            with open(config.key, "rb") as f:
                return Ed25519Key.from_bytes(f.read(4096))
        except (OSError, ValueError) as exc:
            raise StartupError(f"--key {config.key}: not a usable identity key "
                               f"({getattr(exc, 'strerror', None) or exc})") from None
    data_dir = config.data_dir
    path = os.path.join(data_dir, IDENTITY_FILE) if data_dir else None
    try:
        if path and os.path.exists(path):
            with open(path, "rb") as f:
                return Ed25519Key.from_bytes(f.read())
        key = Ed25519Key.generate(name)
        if path:
            os.makedirs(data_dir, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(key.to_bytes())
        return key
    except (OSError, ValueError) as exc:
        raise StartupError(f"identity in {data_dir}: {exc}") from None


def _load_trust(config: NodeConfig, key: Ed25519Key) -> tuple[Certificate, Schema | None]:
    """The node's certificate (--cert, checked against its key, or self-signed) and its trust schema (--trust)."""
    assert key.name is not None
    if config.cert:
        try:
            cert = load_certificate(config.cert)
        except OSError as exc:
            raise StartupError(f"--cert {config.cert}: cannot read: {exc.strerror or exc}") from None
        except CertificateError as exc:
            raise StartupError(f"--cert {exc}") from None
        if cert.key_name != key.name or cert.public_key != key.public_bytes():
            raise StartupError(f"--cert {config.cert}: certifies {cert.key_name}, not the node's key {key.name}"
                               + ("" if cert.key_name != key.name else " (another public key)"))
        problem = cert.validity_problem(time.time())
        if problem:
            log.warning("--cert %s: the certificate %s is %s", config.cert, cert.name, problem)
    else:
        cert = self_signed(key, now=time.time())
    schema = None
    if config.trust:
        try:
            schema = load_schema(config.trust)
        except SchemaError as exc:
            raise StartupError(f"--trust {exc}") from None
        except OSError as exc:
            raise StartupError(f"--trust {config.trust}: cannot read: {exc.strerror or exc}") from None
    return cert, schema


def _warn_foreign_key(config: NodeConfig, name: Name, key: Ed25519Key) -> None:
    """Once the identity and its certificate are accepted: a key named for another node signs
    link state that neighbours refuse."""
    assert key.name is not None
    owner = key.name.prefix(-2)  # <identity>/KEY/<key-id>
    if config.key and owner != name:
        log.warning("--key %s: the key %s is %s's, not this node's (%s): neighbours refuse the link state "
                    "it signs, which must be signed by a key under the node's name (icnd keygen --name %s)",
                    config.key, key.name, owner, name, name)


def warn_if_schema_refuses_link_state(name: Name, identity: Identity) -> None:
    """A trust schema that refuses this node's own routing Data (records, hello proofs): with no rule
    for them the node learns no routes, with one that refuses its key no node routes to it."""
    schema = identity.validator.schema
    if schema is None:
        return
    key_name = identity.key.name
    for data_name in (record_name(name, 1), name.append("routing", "hello", "challenge")):
        why = schema.refuses(data_name, key_name)
        if why is not None:
            base = name.prefix(-1).to_uri().rstrip("/")
            fix = ("nodes applying it do not route to this node" if schema.matching(data_name) else
                   f'this node learns no routes; add a rule for them: data = "{base}/<node>/routing/<**>", '
                   f'signer = "{base}/<node>/KEY/<*>"')
            log.warning("--trust %s refuses link-state routing Data such as this node's %s signed by %s "
                        "(%s): %s", schema.source, data_name, key_name, why, fix)
            return
