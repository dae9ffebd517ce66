#!/usr/bin/env python3
"""Writes a demo history of nightly RMSNorm runs as RunSummary JSON files.

The numbers are the TorchNeuron profiling guide's RMSNorm example (4x512 bf16, eps 1e-6) on
Trainium: the naive five-op version spends 2,355 us of Neuron device time per step
(aten::mul 1,164.5 / aten::add 434.6 / aten::rsqrt 415.0 / aten::mean 340.8 us), the fused
torch.rms_norm 403.3 us and torch.compile 375.5 us. Fourteen nights (2026-11-15..28, 02:00
UTC) of each, with +-0.8 % deterministic noise; on 2026-11-25 a compiler update
(neuronx-cc 2.21 -> 2.22) makes the "fused" workload lose its fusion and fall back to the
five naive ops: the regression devtime exists to catch.

Run ids are derived from workload and night, and the dates are fixed, so writing and
uploading the history twice stores it once.

usage: make_history.py --out DIR
"""
import argparse
import datetime
import json
import os
import random
import uuid

NAMESPACE = uuid.UUID("6f1c3a52-8d0e-4b7a-9a61-3c2d1e0f9b88")
FIRST_NIGHT = datetime.datetime(2026, 11, 15, 2, 0, tzinfo=datetime.timezone.utc)
NIGHTS = 14
FUSION_LOST_NIGHT = 10  # 2026-11-25
ACTIVE_STEPS = 5

# (op, calls per step, self device us per step, self cpu us per step)
NAIVE_OPS = [
    ("aten::mul", 2, 1164.5, 38.0),
    ("aten::add", 1, 434.6, 14.0),
    ("aten::rsqrt", 1, 415.0, 12.0),
    ("aten::mean", 1, 340.8, 21.0),
]
FUSED_OPS = [("aten::rms_norm", 1, 403.3, 19.0)]
COMPILED_OPS = [("CompiledFunction", 1, 375.5, 26.0)]


def environment(night):
    compiler = "2.22.4" if night >= FUSION_LOST_NIGHT else "2.21.18"
    return {
        "torch": "2.9.0",
        "torch-neuronx": "2.9.0.2.11",
        "neuronx-cc": compiler,
        "neuron-runtime": "2.28.19",
        "python": "3.11.9",
        "model_commit": "4be2c1f",
    }


def ops_for(workload, night):
    if workload == "naive":
        return NAIVE_OPS
    if workload == "fused":
        return NAIVE_OPS if night >= FUSION_LOST_NIGHT else FUSED_OPS
    return COMPILED_OPS


def run_summary(workload, night):
    rng = random.Random(f"{workload}/{night}")
    started = FIRST_NIGHT + datetime.timedelta(days=night, seconds=rng.randint(0, 600))
    finished = started + datetime.timedelta(seconds=rng.randint(40, 90))
    run_level = 1 + rng.uniform(-0.008, 0.008)  # the night's machine-wide noise
    ops, steps = [], [{"step": 3 + s, "device_us": 0.0, "cpu_us": 0.0} for s in range(ACTIVE_STEPS)]
    for name, calls, device_us, cpu_us in ops_for(workload, night):
        samples = [round(device_us * run_level * (1 + rng.uniform(-0.004, 0.004)), 2)
                   for _ in range(ACTIVE_STEPS)]
        for step, sample in zip(steps, samples):
            step["device_us"] = round(step["device_us"] + sample, 2)
            step["cpu_us"] = round(step["cpu_us"] + cpu_us, 2)
        total_device = round(sum(samples), 2)
        ops.append({
            "name": name,
            "calls": calls * ACTIVE_STEPS,
            "self_cpu_us": round(cpu_us * ACTIVE_STEPS, 2),
            "total_cpu_us": round(cpu_us * ACTIVE_STEPS, 2),
            "self_device_us": total_device,
            "total_device_us": total_device,
            "step_self_device_us": samples,
        })
    device_total = round(sum(step["device_us"] for step in steps), 2)
    dispatch_total = round(sum(step["cpu_us"] for step in steps), 2)
    return {
        "identity": {
            "run_id": str(uuid.uuid5(NAMESPACE, f"rmsnorm/{workload}/{night}")),
            "job": f"rmsnorm-{workload}-nightly",
            "model": "rmsnorm",
            "workload": workload,
            "host": "trn1-demo-01",
            "instance_type": "trn1.2xlarge",
            "device_kind": "DEVICE_KIND_NEURON",
        },
        "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "finished_at": finished.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "status": "RUN_STATUS_OK",
        "environment": environment(night),
        "capture": {
            "wait_steps": 2, "warmup_steps": 1, "active_steps": ACTIVE_STEPS,
            "synchronized": True, "events_dropped": "0",
            "profiler": "torch.profiler 2.9.0 (TorchNeuron, correlate_device_time)",
            "trace_format": "neuron-dir",
        },
        "ops": ops,
        "steps": steps,
        "layers": [
            {"layer": "LAYER_FRAMEWORK_DISPATCH", "time_us": dispatch_total},
            {"layer": "LAYER_DEVICE_EXECUTION", "time_us": device_total},
        ],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder for the JSON files")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    count = 0
    for workload in ("naive", "fused", "compiled"):
        for night in range(NIGHTS):
            path = os.path.join(args.out, f"rmsnorm-{workload}-night{night + 1:02d}.json")
            with open(path + ".tmp", "w") as out:
                json.dump(run_summary(workload, night), out, indent=1)
            os.replace(path + ".tmp", path)
            count += 1
    print(f"wrote {count} runs to {args.out}")


if __name__ == "__main__":
    main()
