#!/usr/bin/env python3
"""Writes what the devtime harness writes for one RMSNorm capture, with the TorchNeuron guide's
device times, as a Kineto trace: the stand-in for a Trainium job in the end-to-end tests.

No accelerator exists on the test machines, so the device side is generated; the format is
Kineto's object form exactly as tests/fixtures/trace/kineto_cuda_basic.json documents it
(profiler-formats.md §1.1-§1.6: ProfilerStep#N user_annotation windows, the cpu_op ->
cuda_runtime (args.correlation) -> kernel triple, 3-decimal µs timestamps relative to
baseTimeNanoseconds). The numbers are the guide's RMSNorm example (4x512 bf16, per step):
naive  aten::mul 1,164.5 us (2 calls), aten::add 434.6, aten::rsqrt 415.0, aten::mean 340.8
       = 2,354.9 us;  fused  aten::rms_norm 403.3 us.
Each kernel gets +-0.5 % deterministic jitter (seeded by --seed) so steps differ a little.

usage: rmsnorm_kineto.py --mode naive|fused --out DIR [--steps N] [--seed S]
                         [--env KEY=VALUE ...]
"""
import argparse
import datetime
import json
import os
import random

NAIVE = [("aten::mul", 2, 1164.5), ("aten::add", 1, 434.6), ("aten::rsqrt", 1, 415.0),
         ("aten::mean", 1, 340.8)]
FUSED = [("aten::rms_norm", 1, 403.3)]
BASE_NS = 1719853884000000000
PID, STREAM = 4242, 7


def us(value):
    return round(value, 3)


def step_events(step, start, ops, rng, ids):
    """Events of one ProfilerStep window starting at `start` (us); returns (events, end)."""
    events = []
    t = start + 5.0
    device_t = start + 20.0
    for name, calls, device_us in ops:
        for _ in range(calls):
            ids["external"] += 1
            ids["correlation"] += 1
            external, correlation = ids["external"], ids["correlation"]
            kernel_us = device_us / calls * (1.0 + rng.uniform(-0.005, 0.005))
            events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": PID, "tid": PID,
                           "ts": us(t), "dur": 12.0, "args": {"External id": external}})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": PID, "tid": PID, "ts": us(t + 2.0), "dur": 6.0,
                           "args": {"External id": external, "cbid": 211,
                                    "correlation": correlation}})
            device_t = max(device_t, t + 8.0)
            events.append({"ph": "X", "cat": "kernel", "name": name.replace("aten::", "k_"),
                           "pid": 0, "tid": STREAM, "ts": us(device_t), "dur": us(kernel_us),
                           "args": {"External id": external, "correlation": correlation,
                                    "device": 0, "stream": STREAM}})
            device_t += kernel_us + 1.0
            t += 14.0
    end = max(t, device_t) + 5.0
    events.insert(0, {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step,
                      "pid": PID, "tid": PID, "ts": us(start), "dur": us(end - start),
                      "args": {"External id": 0}})
    return events, end


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["naive", "fused"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for environment.json")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    ops = NAIVE if args.mode == "naive" else FUSED
    started = datetime.datetime.now(datetime.timezone.utc)
    events = [{"name": "process_labels", "ph": "M", "pid": 0, "tid": 0,
               "args": {"labels": "GPU 0"}}]
    ids = {"external": 100, "correlation": 1000}
    t = 1000.0
    for step in range(1, args.steps + 1):
        step_evts, t = step_events(step, t, ops, rng, ids)
        events.extend(step_evts)
        t += 50.0
    events.append({"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "",
                   "ts": us(t + 10.0)})
    trace = {"schemaVersion": 1,
             "deviceProperties": [{"id": 0, "name": "stand-in device", "totalGlobalMem": 1}],
             "displayTimeUnit": "ms", "baseTimeNanoseconds": BASE_NS,
             "traceEvents": events, "traceName": "rmsnorm_kineto.py"}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "trace.json"), "w") as f:
        json.dump(trace, f)
    env = {"capture.wait": "2", "capture.warmup": "1", "capture.active": str(args.steps),
           "capture.synchronized": "true", "device": "cuda"}
    for item in args.env:
        key, _, value = item.partition("=")
        env[key] = value
    with open(os.path.join(args.out, "environment.json"), "w") as f:
        json.dump(env, f)
    finished = datetime.datetime.now(datetime.timezone.utc)
    with open(os.path.join(args.out, "run.json"), "w") as f:
        json.dump({"workload": "rmsnorm-" + args.mode, "device": "cuda", "steps": args.steps,
                   "started_at": started.isoformat(), "finished_at": finished.isoformat()}, f)


if __name__ == "__main__":
    main()
