"""commands.run: results, live streaming, background jobs, stdin, kill."""
import time

import pytest

import paddock


def test_run_result(tiny):
    r = tiny.commands.run("echo out; echo err >&2; exit 3")
    assert (r.stdout, r.stderr, r.exit_code) == ("out\n", "err\n", 3)


def test_run_cwd_env_words(tiny):
    r = tiny.commands.run("pwd; echo $GREETING", cwd="/tmp", env={"GREETING": "hi there"})
    assert r.stdout == "/tmp\nhi there\n"
    r = tiny.commands.run(["echo", "a b", "$HOME", "it's"])
    assert r.stdout == "a b $HOME it's\n"


def test_streaming_arrives_while_it_runs(tiny):
    """A job printing for 5 s: its output comes in pieces spread over
    those seconds, not at the end."""
    got = []
    start = time.monotonic()
    r = tiny.commands.run(
        "for i in 1 2 3 4 5 6 7 8 9 10; do echo line $i; sleep 0.5; done",
        on_stdout=lambda t: got.append((time.monotonic() - start, t)))
    end = time.monotonic() - start
    assert r.exit_code == 0
    assert "".join(t for _, t in got) == "".join("line %d\n" % i for i in range(1, 11))
    assert len(got) >= 5, got
    assert got[0][0] < 2.0, got          # the first line long before the end
    assert got[-1][0] - got[0][0] >= 3.5, got  # spread over the run
    assert end >= 4.5


def test_stderr_streams_apart(tiny):
    out, err = [], []
    r = tiny.commands.run("echo a; echo b >&2; sleep 0.3; echo c; echo d >&2",
                          on_stdout=out.append, on_stderr=err.append)
    assert "".join(out) == "a\nc\n" and "".join(err) == "b\nd\n"
    assert r.stdout == "a\nc\n" and r.stderr == "b\nd\n"


def test_background_stdin_and_kill(tiny):
    h = tiny.commands.run("cat; echo eof-seen", background=True)
    assert isinstance(h, paddock.CommandHandle)
    h.send_stdin("hello\n")
    h.send_stdin(b"world\n")
    h.close_stdin()
    r = h.wait(timeout=30)
    assert r.stdout == "hello\nworld\neof-seen\n" and r.exit_code == 0

    h = tiny.commands.run("echo started; sleep 300", background=True)
    for stream, text in h:
        assert (stream, text) == ("stdout", "started\n")
        break
    t = time.monotonic()
    h.kill()
    r = h.wait(timeout=30)
    assert r.exit_code == 137 and time.monotonic() - t < 10
    assert h.exit_code == 137


def test_stdin_argument(tiny):
    data = "x" * 200000 + "\n"  # more than one write
    r = tiny.commands.run("wc -c", stdin=data)
    assert r.stdout.strip() == str(len(data))


def test_timeout_kills(tiny):
    t = time.monotonic()
    with pytest.raises(paddock.CommandTimeoutError):
        tiny.commands.run("sleep 300", timeout=1)
    assert time.monotonic() - t < 10


def test_iterate_background_output(tiny):
    h = tiny.commands.run("echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three",
                          background=True)
    pieces = list(h)
    assert "".join(t for s, t in pieces if s == "stdout") == "one\nthree\n"
    assert "".join(t for s, t in pieces if s == "stderr") == "two\n"
    assert h.wait().exit_code == 0
