#!/usr/bin/python3
"""Baseline for trace_bench: Python's json module loads the same Kineto trace and aggregates
self CPU time per op (nesting per thread, torch's rule), as a Python tool would.
Usage: baseline.py FILE  (FILE may be gzip). Prints one RESULT line like trace_bench."""
import gzip
import json
import resource
import sys
import time
from collections import defaultdict

HOST = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "privateuse1_runtime",
        "privateuse1_driver"}


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main(path):
    t0 = time.perf_counter()
    c0 = cpu()
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    with opener(path, "rb") as f:
        raw = f.read()
    json_bytes = len(raw)
    doc = json.loads(raw)
    del raw
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    threads = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat", "cpu_op") in HOST:
            ts = float(e["ts"])
            threads[(e.get("pid"), e.get("tid"))].append((ts, -(ts + float(e["dur"])), e))
    self_time = defaultdict(float)
    calls = defaultdict(int)
    for evs in threads.values():
        evs.sort(key=lambda x: (x[0], x[1]))
        stack = []
        for ts, neg_end, e in evs:
            end = -neg_end
            while stack and (ts >= stack[-1][0] or end > stack[-1][0]):
                stack.pop()
            name = e["name"]
            self_time[name] += e["dur"]
            calls[name] += 1
            if stack:
                self_time[stack[-1][1]] -= e["dur"]
            stack.append((end, name))
    secs = time.perf_counter() - t0
    cpu_secs = cpu() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("python json %s: %.1f MB JSON in %.3f s wall = %.1f MB/s, %.3f s CPU = %.1f MB/s; "
          "peak RSS %.1f MB; %d op names"
          % ("gzip" if gz else "plain", json_bytes / 1e6, secs, json_bytes / 1e6 / secs,
             cpu_secs, json_bytes / 1e6 / cpu_secs, rss, len(self_time)))
    print("RESULT kind=python_%s json_bytes=%d seconds=%.6f cpu_seconds=%.6f peak_rss_mb=%.1f"
          % ("gzip" if gz else "plain", json_bytes, secs, cpu_secs, rss))


if __name__ == "__main__":
    main(sys.argv[1])
