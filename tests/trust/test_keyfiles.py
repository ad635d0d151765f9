"""`icnd.keyfiles`: the shell reads key, certificate and schema files; what it refuses is an `icnd.Error`."""

from __future__ import annotations

import pytest

import icnd
from icnd.keyfiles import load_certificate, load_key, save_certificate
from icnd.name import Name
from icnd.security import Ed25519Key, KeyFileError
from icnd.trust.cert import self_signed

from ._pki import T


def test_a_key_file_round_trips(tmp_path) -> None:
    key = Ed25519Key.generate(Name("/net/alice"))
    path = tmp_path / "alice.key"
    path.write_bytes(key.to_bytes())
    loaded = load_key(path)
    assert loaded.name == key.name and loaded.public_bytes() == key.public_bytes()


@pytest.mark.parametrize("content", [b"", b"\x93garbage", icnd.encode(icnd.Data(Name("/x"), b"y"))])
def test_a_bad_key_file_is_an_icnd_error_naming_the_file(tmp_path, content: bytes) -> None:
    path = tmp_path / "bad.key"
    path.write_bytes(content)
    with pytest.raises(icnd.Error, match=f"^{path}: ") as info:
        load_key(path)
    assert isinstance(info.value, KeyFileError) and isinstance(info.value, ValueError)


def test_a_certificate_file_is_not_a_key_file(tmp_path) -> None:
    key = Ed25519Key.generate(Name("/net/alice"))
    path = tmp_path / "alice.cert"
    save_certificate(self_signed(key, now=T), path)
    with pytest.raises(KeyFileError):
        load_key(path)
    assert load_certificate(path).key_name == key.name
