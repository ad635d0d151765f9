import pytest

from icnd.faces import DEFAULT_PORT, FaceUri, parse_face_uri


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("udp://127.0.0.1:6363", FaceUri("udp", "127.0.0.1", 6363, "")),
        ("tcp://127.0.0.1:40000", FaceUri("tcp", "127.0.0.1", 40000, "")),
        ("tcp://example.com", FaceUri("tcp", "example.com", DEFAULT_PORT, "")),
        ("udp://localhost", FaceUri("udp", "localhost", 6363, "")),
        ("UDP://10.0.0.1:0", FaceUri("udp", "10.0.0.1", 0, "")),
        ("udp://[::1]:7000", FaceUri("udp", "::1", 7000, "")),
        ("tcp://[::1]", FaceUri("tcp", "::1", 6363, "")),
        ("tcp://[fe80::1%eth0]:9", FaceUri("tcp", "fe80::1%eth0", 9, "")),
        ("unix:///tmp/x.sock", FaceUri("unix", "", None, "/tmp/x.sock")),
        ("unix:///run/user/1000/icnd.sock", FaceUri("unix", "", None, "/run/user/1000/icnd.sock")),
    ],
)
def test_good_uris(uri, expected):
    assert parse_face_uri(uri) == expected


@pytest.mark.parametrize(
    ("uri", "canonical"),
    [
        ("udp://[::1]:7000", "udp://[::1]:7000"),
        ("tcp://h", "tcp://h:6363"),
        ("unix:///tmp/x.sock", "unix:///tmp/x.sock"),
    ],
)
def test_str_is_canonical(uri, canonical):
    assert str(parse_face_uri(uri)) == canonical
    assert parse_face_uri(str(parse_face_uri(uri))) == parse_face_uri(uri)


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("127.0.0.1:6363", "no scheme"),
        ("http://host:80", "unknown scheme"),
        ("udp://", "no host"),
        ("udp://:6363", "no host"),
        ("udp://host:", "not a number"),
        ("udp://host:abc", "not a number"),
        ("udp://host:-1", "not a number"),
        ("udp://host:65536", "out of range"),
        ("udp://::1:6363", "must be in brackets"),
        ("udp://[::1:6363", "closing"),
        ("udp://[nothex]:1", "not an IPv6 address"),
        ("udp://[::1]6363", "after ']'"),
        ("tcp://host:1/path", "unexpected '/'"),
        ("tcp://user@host:1", "unexpected '@'"),
        ("tcp://bad host:1", "not a valid host"),
        ("unix://relative.sock", "absolute path"),
        ("unix://", "absolute path"),
        ("unix:///tmp/dir/", "directory"),
        ("unix:///tmp/a\x00b", "NUL"),
    ],
)
def test_bad_uris(uri, message):
    with pytest.raises(ValueError, match=message) as info:
        parse_face_uri(uri)
    assert repr(uri) in str(info.value)


def test_not_a_string():
    with pytest.raises(ValueError, match="must be a string"):
        parse_face_uri(b"udp://h:1")  # type: ignore[arg-type]  # bytes on purpose: refused
