"""Prompts and the desktop on an image that has neither (tiny): the
server's refusals come back typed, and nothing is left behind. The
events' parsing is checked on a recorded stream."""
import pytest

import paddock
from paddock._box import Prompt


def test_prompt_unknown_agent(tiny):
    with pytest.raises(paddock.PaddockError) as e:
        tiny.prompt("say hi", agent="no-such-agent")
    assert "no-such-agent" in e.value.message
    left = tiny.client.get_json("boxes/%s/prompts/" % tiny.name)["entries"]
    assert [x["name"] for x in left if x["name"].startswith("sdk-")] == []


def test_desktop_refused_without_one(tiny):
    with pytest.raises(paddock.PaddockError) as e:
        tiny.desktop.screenshot()
    assert e.value.status >= 400 and e.value.message
    with pytest.raises(ValueError):
        tiny.desktop.type("two\nlines")


class _FakeStream:
    def __init__(self, pieces):
        self.pieces = pieces

    def __enter__(self):
        return self

    def __exit__(self, *a):
        pass

    def __iter__(self):
        return iter(self.pieces)


class _FakeClient:
    def __init__(self, pieces):
        self.pieces = pieces

    def stream(self, path):
        assert path.endswith("/events")
        return _FakeStream(self.pieces)


def test_prompt_events_parsing():
    pieces = [b'{"type":"start","agent":"x"}\n{"type":"mess', b'age","text":"h\xc3',
              b'\xa9"}\nnot json\n\n{"type":"end","exit":0}\n{"type":"late"}\n']
    events = list(Prompt(_FakeClient(pieces), "b", "p"))  # type: ignore[arg-type]
    assert [e["type"] for e in events] == ["start", "message", "end"]
    assert events[1]["text"] == "hé"
