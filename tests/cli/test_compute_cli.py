"""``icnd call | submit | result`` (interface §16): parsing, what reaches the
client, what is printed -- with the client replaced by a recording fake.

`icnd.cli.compute.with_client` is where these commands leave the CLI; here
it hands the command a fake client that records each call and answers
from canned values.  The same commands against a real daemon are in
tests/integration/test_cli_compose.py."""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

import pytest
import trio

import icnd
from icnd.cli import build_parser, main
from icnd.cli import compute


class FakeClient:
    """Records ``call``/``submit``/``result`` and answers `answer` (raised if an exception)."""

    def __init__(self, answer: Any, host: str | None = None) -> None:
        self.answer = answer
        self.host = host
        self.sent: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def _reply(self) -> Any:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    async def call(self, fn: icnd.Name, *args: Any, **kw: Any) -> Any:
        self.sent.append(("call", (fn, *args), kw))
        if kw.get("info") is not None and any(isinstance(a, (icnd.Ref, icnd.Future)) for a in args):
            kw["info"]["host"] = self.host
        return self._reply()

    async def submit(self, fn: icnd.Name, *args: Any, **kw: Any) -> Any:
        self.sent.append(("submit", (fn, *args), kw))
        self._reply()
        return icnd.Future(icnd.Name("/node/h/thunk/ab12"))

    async def result(self, name: icnd.Name, **kw: Any) -> Any:
        self.sent.append(("result", (name,), kw))
        return self._reply()


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeClient]:
    def install(answer: Any = None, host: str | None = None) -> FakeClient:
        fake = FakeClient(answer, host)

        def with_client(socket: str | None, action: Callable[[Any], Awaitable[Any]]) -> Any:
            return trio.run(action, fake)

        monkeypatch.setattr(compute, "with_client", with_client)
        return fake

    return install


def test_named_arguments_come_last_in_the_order_given(client, tmp_path, capsys) -> None:
    import numpy as np

    np.save(tmp_path / "x.npy", np.ones(2))
    fake = client(3.0, host="/node/c")
    assert main(["call", "/fn/f", "1", "two", "--future", "/node/b/thunk/1", "--npy", str(tmp_path / "x.npy"),
                 "--ref", "/data/A", "--future", "/node/b/thunk/2", "--json"]) == 0
    (verb, (fn, *args), kw) = fake.sent[0]
    assert verb == "call" and fn == icnd.Name("/fn/f")
    assert args[:2] == [1, "two"] and list(args[2]) == [1.0, 1.0]
    assert args[3:] == [icnd.Future(icnd.Name("/node/b/thunk/1")), icnd.Ref("/data/A"), icnd.Future(icnd.Name("/node/b/thunk/2"))]
    assert kw["place"] == "near" and kw["timeout"] == 60.0
    assert json.loads(capsys.readouterr().out) == {"result": 3.0, "host": "/node/c"}


def test_json_stays_the_bare_result_without_named_arguments(client, capsys) -> None:
    client([1, 2])
    assert main(["call", "/fn/f", "--json-args", "[1]", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [1, 2]
    client(None)
    assert main(["call", "/fn/f", "--ref", "/data/A", "--json"]) == 0  # the network chose the host
    assert json.loads(capsys.readouterr().out) == {"result": None, "host": None}


@pytest.mark.parametrize("given, sent", [("near", "near"), ("any", "any"), ("/node/b", "/node/b"),
                                         ("/node/%62", "/node/b")])
def test_place_is_near_any_or_a_node_name(given: str, sent: str) -> None:
    assert build_parser().parse_args(["call", "/fn/f", "--place", given]).place == sent


@pytest.mark.parametrize("bad", ["nearest", "node/b", ""])
def test_a_bad_place_is_a_usage_error(bad: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["submit", "/fn/f", "--place", bad])
    assert exit_.value.code == 2 and "--place" in capsys.readouterr().err


def test_submit_prints_the_future_name(client, capsys) -> None:
    fake = client()
    assert main(["submit", "/fn/f", "--ref", "/data/A", "--place", "any", "--timeout", "5"]) == 0
    assert capsys.readouterr().out == "/node/h/thunk/ab12\n"
    assert fake.sent == [("submit", (icnd.Name("/fn/f"), icnd.Ref("/data/A")), {"timeout": 5.0, "place": "any"})]
    assert main(["submit", "/fn/f", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"future": "/node/h/thunk/ab12"}


def test_result_prints_as_call_does(client, tmp_path, capsys) -> None:
    import numpy as np

    fake = client(np.arange(3))
    out = tmp_path / "r.npy"
    assert main(["result", "/node/h/thunk/ab12", "-o", str(out), "--timeout", "7"]) == 0
    assert fake.sent == [("result", (icnd.Name("/node/h/thunk/ab12"),), {"timeout": 7.0})]
    assert capsys.readouterr().out.startswith("saved int64 (3,)")
    np.testing.assert_array_equal(np.load(out), np.arange(3))
    client("text")
    assert main(["result", "/node/h/thunk/ab12"]) == 0
    assert capsys.readouterr().out == "text\n"
    assert main(["result", "/node/h/thunk/ab12", "-o", str(out)]) == 1
    assert capsys.readouterr().err == "icnd: error: -o: the result is a str, not an array\n"


@pytest.mark.parametrize("error", [icnd.NotFound("/node/h/thunk/ab12: no longer kept"),
                                   icnd.Timeout("/node/h/thunk/ab12: no result within 1s"),
                                   icnd.RemoteError("ValueError", "bad things")])
def test_result_failures_are_one_line_and_exit_1(client, capsys, error: Exception) -> None:
    client(error)
    assert main(["result", "/node/h/thunk/ab12"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"icnd: error: {error}\n"


def test_help_lists_the_commands_and_options(capsys) -> None:
    top = build_parser().format_help()
    assert "submit" in top and "result" in top
    for command, options in [("call", ["--ref NAME", "--future NAME", "--place near|any|NODE", "--json"]),
                             ("submit", ["--ref NAME", "--future NAME", "--place near|any|NODE", "--timeout S"]),
                             ("result", ["NAME", "--timeout S", "-o FILE.npy", "--json"])]:
        with pytest.raises(SystemExit):
            main([command, "-h"])
        text = capsys.readouterr().out
        assert all(option in text for option in options), (command, text)
