"""paddock.aio: run, live streaming with async for, callbacks, stdin, kill."""
import asyncio
import time

import paddock
from paddock.aio import AsyncBox


def test_async_run_and_stream(tiny):
    async def main():
        box = await AsyncBox.connect(tiny.name, client=tiny.client)
        r = await box.commands.run("echo hi; echo err >&2; exit 2")
        assert (r.stdout, r.stderr, r.exit_code) == ("hi\n", "err\n", 2)

        start = time.monotonic()
        times = []
        job = await box.commands.run(
            "for i in 1 2 3 4 5 6 7 8 9 10; do echo $i; sleep 0.5; done", background=True)
        text = ""
        async for stream, piece in job:
            assert stream == "stdout"
            times.append(time.monotonic() - start)
            text += piece
        assert text == "".join("%d\n" % i for i in range(1, 11))
        assert len(times) >= 5 and times[0] < 2.0 and times[-1] - times[0] >= 3.5
        assert (await job.wait()).exit_code == 0

        got = []

        async def on_out(t):
            await asyncio.sleep(0)
            got.append(t)

        r = await box.commands.run("echo a; sleep 0.2; echo b", on_stdout=on_out)
        assert "".join(got) == "a\nb\n" and r.stdout == "a\nb\n"

        job = await box.commands.run("cat", background=True)
        await job.send_stdin("in\n")
        await job.close_stdin()
        assert (await job.wait()).stdout == "in\n"

        job = await box.commands.run("sleep 300", background=True)
        await job.kill()
        assert (await job.wait()).exit_code == 137

        # Several at once.
        rs = await asyncio.gather(*(box.commands.run("sleep 1; echo %d" % i) for i in range(4)))
        assert [r.stdout for r in rs] == ["%d\n" % i for i in range(4)]
    t = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - t < 30


def test_async_files_and_errors(tiny):
    async def main():
        box = await AsyncBox.connect(tiny.name, client=tiny.client)
        await box.files.write("/tmp/async.txt", "x\n")
        assert await box.files.read("/tmp/async.txt") == "x\n"
        try:
            await AsyncBox.connect("no-such-box", client=tiny.client)
        except paddock.NotFoundError as e:
            return e
    assert isinstance(asyncio.run(main()), paddock.NotFoundError)
