"""``icnd keygen``: create an Ed25519 identity (interface §5); ``icnd cert
self|issue|show``: certificates for those identities (interface §13).

Files are never overwritten (exit 1, like keygen); a file that is not what
its option wants (a key, a certificate) is a usage error: one line, exit 2."""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from icnd.cli.errors import CliError
from icnd.cli.options import add_command, add_group, name_arg
from icnd.codec import encode
from icnd.daemon.config import NodeConfig
from icnd.security import Ed25519Key
from icnd.trust.cert import (DEFAULT_DAYS, MAX_CERT_FILE, Certificate, CertificateError, certificate_from_bytes,
                             issue, self_signed)

MAX_KEY_FILE = 4096
MAX_DAYS = 3_000_000


def cmd_keygen(args: argparse.Namespace) -> int:
    identity = args.identity if args.identity is not None else NodeConfig().node_name()
    key = Ed25519Key.generate(identity)
    try:
        fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise CliError(f"{args.out} exists; refusing to overwrite it") from None
    except OSError as exc:
        raise CliError(f"cannot create {args.out}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as f:
        f.write(key.to_bytes())
    _print_made(args, "key", key.name.to_uri(), args.out)
    return 0


def _print_made(args: argparse.Namespace, what: str, name: str, path: str) -> None:
    """The name of what was made (a key, a certificate); with --json ``{<what>, file}``."""
    if args.json:
        print(json.dumps({what: name, "file": os.path.abspath(path)}, indent=2))
    else:
        print(name)


# --- certificates --------------------------------------------------------------------------------


def days_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of days: {text!r}") from None
    if not 0 < value <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"must be > 0 and <= {MAX_DAYS}: {text!r}")
    return value


def _read(path: str, limit: int) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(limit + 1)
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}", 2) from None


def _load_key(path: str) -> Ed25519Key:
    buf = _read(path, MAX_KEY_FILE)
    try:
        return Ed25519Key.from_bytes(buf)
    except ValueError as exc:
        if _is_cert(buf):
            raise CliError(f"{path} is a certificate; a key file (icnd keygen) is needed here", 2) from None
        raise CliError(f"{path}: {exc}", 2) from None


def _load_cert(path: str) -> Certificate:
    buf = _read(path, MAX_CERT_FILE)
    try:
        return certificate_from_bytes(buf, path)
    except CertificateError as exc:  # a key file is named as such (certificate_from_bytes)
        raise CliError(str(exc), 2) from None


def _is_cert(buf: bytes) -> bool:
    try:
        certificate_from_bytes(buf)
    except CertificateError:
        return False
    return True


def _load_subject(path: str) -> Ed25519Key | Certificate:
    """A key file, or a certificate file (its key is the subject)."""
    buf = _read(path, MAX_KEY_FILE)
    try:
        return Ed25519Key.from_bytes(buf)
    except ValueError as key_exc:
        try:
            return certificate_from_bytes(buf, path)
        except CertificateError:
            raise CliError(f"{path}: neither a key file nor a certificate ({key_exc})", 2) from None


def _write_new(path: str, payload: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise CliError(f"{path} exists; refusing to overwrite it") from None
    except OSError as exc:
        raise CliError(f"cannot create {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as f:
        f.write(payload)


def cmd_cert_self(args: argparse.Namespace) -> int:
    key = _load_key(args.key)
    cert = self_signed(key, now=time.time(), days=args.days)
    _write_new(args.out, encode(cert.data))
    _print_made(args, "certificate", cert.name.to_uri(), args.out)
    return 0


def cmd_cert_issue(args: argparse.Namespace) -> int:
    issuer = _load_key(args.issuer)
    subject = _load_subject(args.key)
    cert = issue(issuer, subject, now=time.time(), days=args.days)
    _write_new(args.out, encode(cert.data))
    _print_made(args, "certificate", cert.name.to_uri(), args.out)
    return 0


def cmd_cert_show(args: argparse.Namespace) -> int:
    cert = _load_cert(args.file)
    info = cert.to_json()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    issuer = f"{info['issuer']} (self-signed)" if cert.self_signed else str(info["issuer"])
    now_ms = time.time() * 1000
    state = " (expired)" if now_ms > cert.not_after_ms else " (not yet valid)" if now_ms < cert.not_before_ms else ""
    validity = f"{info['not_before']} .. {info['not_after']}{state}"
    rows = [("name", info["name"]), ("key", info["key"]), ("issuer", issuer), ("validity", validity),
            ("public key", info["public_key"]), ("digest", info["digest"])]
    for label, value in rows:
        print(f"{label + ':':<12}{value}")
    return 0


def add_commands(subparsers: Any) -> None:
    p = add_command(
        subparsers, "keygen", cmd_keygen, "create an Ed25519 identity",
        description="Create an Ed25519 identity key named <IDENTITY>/KEY/<id>, write it (private key "
        "included) to FILE with mode 0600, and print the key name. Never overwrites a file.",
    )
    p.add_argument("--out", metavar="FILE", default="identity.key",
                   help="where to write the key (default: ./identity.key)")
    p.add_argument("--name", dest="identity", metavar="IDENTITY", type=name_arg,
                   help="identity name (default: /node/<hostname>)")
    p.add_argument("--json", action="store_true", help="print {key, file} as JSON (key: the key name)")

    verbs = add_group(
        subparsers, "cert", "create and inspect certificates",
        "Certificates: a key's public half as named, signed Data with a validity period "
        "(/<identity>/KEY/<key-id>/<issuer-id>/v=<n>). Never overwrites a file.",
    )
    days_help = f"validity in days from now (default: {DEFAULT_DAYS})"
    p = add_command(verbs, "self", cmd_cert_self, "write a self-signed certificate (a trust anchor)")
    p.add_argument("--key", required=True, metavar="FILE", help="the key to certify (an icnd keygen file)")
    p.add_argument("--out", required=True, metavar="FILE", help="where to write the certificate")
    p.add_argument("--days", type=days_arg, default=DEFAULT_DAYS, metavar="N", help=days_help)
    p.add_argument("--json", action="store_true", help="print {certificate, file} as JSON")
    p = add_command(verbs, "issue", cmd_cert_issue, "certify a key with an issuer's key",
                    description="Certify the key in --key (a key file, or any certificate of that key) "
                    "with the issuer's key, and write the certificate to --out.")
    p.add_argument("--issuer", required=True, metavar="FILE", help="the issuer's key file (signs)")
    p.add_argument("--key", required=True, metavar="FILE",
                   help="the subject's key file, or a certificate of the subject's key")
    p.add_argument("--out", required=True, metavar="FILE", help="where to write the certificate")
    p.add_argument("--days", type=days_arg, default=DEFAULT_DAYS, metavar="N", help=days_help)
    p.add_argument("--json", action="store_true", help="print {certificate, file} as JSON")
    p = add_command(verbs, "show", cmd_cert_show, "print a certificate: name, key, issuer, validity")
    p.add_argument("file", metavar="FILE", help="a certificate file")
    p.add_argument("--json", action="store_true", help="print it as JSON (stable keys)")
