#!/usr/bin/env python3
"""N calls of box.commands.run("true") on an existing box, each timed from
the call to its result (job made, command written, stdout and stderr
followed to their end, exit code read); prints the median and the mean in
milliseconds.

    run_true.py BOX [N]      (server from PADDOCK_URL/PADDOCK_TOKEN or the
                              CLI's stored login; N defaults to 50)

The first call warms the connections up and is not counted. --json prints
{"n":N,"median_ms":M,"mean_ms":A,"min_ms":…,"max_ms":…} instead."""
import argparse
import json
import statistics
import sys
import time

import paddock


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("box")
    ap.add_argument("n", nargs="?", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.n < 1:
        ap.error("N must be at least 1")
    box = paddock.Box(a.box)
    try:
        box.commands.run("true")
        times = []
        for _ in range(a.n):
            t = time.perf_counter()
            r = box.commands.run("true")
            times.append((time.perf_counter() - t) * 1000.0)
            if r.exit_code != 0:
                print("run_true: 'true' exited %d" % r.exit_code, file=sys.stderr)
                return 1
    except paddock.PaddockError as e:
        print("run_true: %s" % e, file=sys.stderr)
        return 1
    med, mean = statistics.median(times), statistics.fmean(times)
    if a.json:
        print(json.dumps({"n": a.n, "median_ms": round(med, 3), "mean_ms": round(mean, 3),
                          "min_ms": round(min(times), 3), "max_ms": round(max(times), 3)}))
    else:
        print("commands.run(\"true\"), %d calls: median %.2f ms, mean %.2f ms "
              "(min %.2f, max %.2f)" % (a.n, med, mean, min(times), max(times)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
