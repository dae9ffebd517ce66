#!/usr/bin/env python3
"""The culprit-hunt tests' CPU workload (issue 25): RMSNorm over 40x512 floats in plain Python,
with the implementation taken from the `rmsnorm_impl` module on PYTHONPATH — the "compiler":
one version fuses it (aten::rms_norm, one pass per row), another is the naive five-op chain
(aten::mul, aten::mean, aten::add, aten::rsqrt, aten::mul, each a pass). Each step's ops are
timed with perf_counter_ns and written as a Kineto CPU trace, with environment.json naming the
module's VERSION as `compiler`, the runtime folder's VERSION as `runtime`, and MODEL_CODE.

usage: hunt_workload.py --out DIR --steps N --runtime-dir DIR [--model-code FILE]
"""
import argparse
import datetime
import json
import os
import time

import rmsnorm_impl  # the pinned "compiler" (PYTHONPATH)

ROWS, COLS = 40, 512
PID = 4242


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--runtime-dir", required=True)
    ap.add_argument("--model-code", default="")
    args = ap.parse_args()
    code = "fused"
    if args.model_code:
        with open(args.model_code) as f:
            code = f.read().strip()
    ops = rmsnorm_impl.NAIVE if code == "naive" else rmsnorm_impl.OPS
    x = [[((r * COLS + c) % 97) / 97.0 + 0.01 for c in range(COLS)] for r in range(ROWS)]
    w = [1.0 + (c % 7) / 100.0 for c in range(COLS)]
    base = time.perf_counter_ns()
    events = []
    started = datetime.datetime.now(datetime.timezone.utc)
    for _ in range(2):  # warm-up, not captured
        state = {"x": x, "w": w}
        for _name, fn in ops:
            fn(state)
    for step in range(1, args.steps + 1):
        step_start = time.perf_counter_ns()
        state = {"x": x, "w": w}
        op_events = []
        for name, fn in ops:
            t0 = time.perf_counter_ns()
            fn(state)
            t1 = time.perf_counter_ns()
            op_events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": PID, "tid": PID,
                              "ts": round((t0 - base) / 1000.0, 3),
                              "dur": round((t1 - t0) / 1000.0, 3), "args": {}})
        step_end = time.perf_counter_ns()
        events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step,
                       "pid": PID, "tid": PID, "ts": round((step_start - base) / 1000.0, 3),
                       "dur": round((step_end - step_start) / 1000.0 + 0.002, 3), "args": {}})
        events.extend(op_events)
    trace = {"schemaVersion": 1, "displayTimeUnit": "ms",
             "baseTimeNanoseconds": int(started.timestamp() * 1e9),
             "traceEvents": events, "traceName": "hunt_workload.py"}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "trace.json"), "w") as f:
        json.dump(trace, f)
    with open(os.path.join(args.runtime_dir, "VERSION")) as f:
        runtime = f.read().strip()
    env = {"capture.wait": "0", "capture.warmup": "2", "capture.active": str(args.steps),
           "capture.profiler": "torch.profiler", "device": "cpu",
           "compiler": rmsnorm_impl.VERSION, "runtime": runtime, "model_code": code}
    with open(os.path.join(args.out, "environment.json"), "w") as f:
        json.dump(env, f)
    finished = datetime.datetime.now(datetime.timezone.utc)
    with open(os.path.join(args.out, "run.json"), "w") as f:
        json.dump({"workload": "rmsnorm", "device": "cpu", "steps": args.steps,
                   "started_at": started.isoformat(), "finished_at": finished.isoformat()}, f)


if __name__ == "__main__":
    main()
