#!/usr/bin/env python3
"""devtime harness: profile one workload and write what devtime-agent reads.

Runs a workload under ``torch.profiler`` with the TorchNeuron guide's capture
recipe -- ``schedule(wait=2, warmup=1, active=N)``, ``prof.step()`` after every
step, a device synchronize per step -- and writes into the output directory:

  trace.json          framework trace (``prof.export_chrome_trace``): a Kineto
                      ``{"traceEvents": [...]}`` object, or a bare JSON array on
                      torch builds without Kineto (e.g. Debian's torch 1.13)
  key_averages.json   ``{"device", "torch_version", "rows": [{"name", "calls",
                      "self_cpu_us", "cpu_total_us", "self_device_us",
                      "device_total_us"}]}`` from ``prof.key_averages()``
  environment.json    flat string -> string map (versions, host, capture settings)
  run.json            ``{"workload", "device", "steps", "started_at",
                      "finished_at"}`` (ISO-8601 UTC); written last, so its
                      presence means the capture completed

With ``torch_neuronx`` importable, the capture uses TorchNeuron's profiler
(activities CPU + PrivateUse1, ``NeuronConfig(modes=[DEVICE, RUNTIME],
profile_output_dir=<out>, correlate_device_time=True)``,
``on_trace_ready=NeuronProfiler(cfg).export_trace``), so the Neuron system/device
traces land under ``<out>/<instance>_pid_<pid>/``.  ``correlate_device_time`` is
passed only when the installed ``NeuronConfig`` accepts it (older TorchNeuron
releases do not); environment.json's ``capture.correlate_device_time`` says
whether it was on.

CLI::

    /usr/bin/python3 agents/harness/devtime_harness.py --workload NAME --out DIR \\
        [--steps N] [--device auto|cpu|cuda|neuron] [--model-commit SHA] [--list]

Exit codes: 0 ok, 2 bad usage (including an unknown workload), 3 workload or
requested device unavailable with this torch / on this host, 1 other errors.

Profiling your own model (as a module)::

    import sys; sys.path.insert(0, "agents/harness")
    from devtime_harness import profile_workload

    model = MyModel().eval().to("cuda")
    x = torch.randn(8, 1024, device="cuda")
    def step():                      # one iteration, no arguments
        with torch.no_grad():
            model(x)
    result = profile_workload(step, "/tmp/devtime-out", steps=5, device="cuda",
                              workload="my-model", model_commit="abc123")
    print(result["trace"], result["key_averages"])

``profile_workload`` runs ``wait + warmup + steps`` iterations of the callable
(warm up / compile before calling it if the first call is slow), synchronizes
the device after each one and returns a dict of the written paths plus
``device``.  It raises ``DeviceUnavailable`` when the requested device is
missing and ``ValueError`` for bad arguments.
"""

import argparse
import datetime
import inspect
import json
import os
import platform
import socket
import subprocess
import sys
import traceback

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3

DEFAULT_WAIT = 2
DEFAULT_WARMUP = 1
DEFAULT_STEPS = 5
DEVICES = ("auto", "cpu", "cuda", "neuron")

_HERE = os.path.dirname(os.path.abspath(__file__))


class DeviceUnavailable(Exception):
    """The requested device cannot be used on this host / with this torch."""


# ---------------------------------------------------------------- small helpers

def _utc_now():
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_json_atomic(path, obj):
    """Write ``obj`` as JSON to ``path`` via a temp file + os.replace."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, ".%s.tmp-%d" % (os.path.basename(path), os.getpid()))
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1, sort_keys=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def _import_torch_neuronx():
    try:
        import torch_neuronx  # noqa: F401
        return torch_neuronx
    except Exception:  # ImportError, or a broken install raising anything else
        return None


def resolve_device(requested):
    """Return (device, torch_neuronx module or None) for auto|cpu|cuda|neuron."""
    import torch
    if requested not in DEVICES:
        raise ValueError("unknown device %r (choose from %s)" % (requested, ", ".join(DEVICES)))
    neuronx = None
    if requested in ("auto", "neuron"):
        neuronx = _import_torch_neuronx()
    if requested == "auto":
        if neuronx is not None:
            return "neuron", neuronx
        if torch.cuda.is_available():
            return "cuda", None
        return "cpu", None
    if requested == "neuron" and neuronx is None:
        raise DeviceUnavailable("--device neuron needs torch_neuronx, which is not importable here")
    if requested == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailable("--device cuda requested but torch.cuda.is_available() is false "
                                "(torch %s)" % torch.__version__)
    if requested == "cpu":
        # Plain torch.profiler even if torch_neuronx is installed.
        return "cpu", None
    return requested, neuronx


def _sync_fn(device, neuronx):
    """(callable or None, description) for a per-step device synchronize."""
    import torch
    if device == "cuda":
        return torch.cuda.synchronize, "torch.cuda.synchronize"
    if device == "neuron":
        mod = getattr(torch, "neuron", None)
        if mod is not None and callable(getattr(mod, "synchronize", None)):
            return mod.synchronize, "torch.neuron.synchronize"
        if neuronx is not None and callable(getattr(neuronx, "synchronize", None)):
            return neuronx.synchronize, "torch_neuronx.synchronize"
        raise DeviceUnavailable("neither torch.neuron.synchronize nor torch_neuronx.synchronize exists")
    return None, "none (cpu executes synchronously)"


# ---------------------------------------------------------------- environment

def _dist_version(name):
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover (python < 3.8)
        return None
    try:
        return metadata.version(name)
    except Exception:
        return None


def _read_first_line(path):
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return f.readline().strip() or None
    except OSError:
        return None


def _package_version(pkg):
    """Version of an OS package (dpkg, else rpm); None if neither knows it."""
    for cmd in (["dpkg-query", "-W", "-f=${Version}", pkg],
                ["rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}", pkg]):
        try:
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 timeout=5, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        text = out.stdout.decode("utf-8", "replace").strip()
        if out.returncode == 0 and text:
            return text
    return None


def _imds_instance_type():
    """IMDSv2 lookup; only called when DEVTIME_IMDS=1."""
    import urllib.request
    base = "http://169.254.169.254/latest"
    try:
        req = urllib.request.Request(base + "/api/token", method="PUT",
                                     headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"})
        token = urllib.request.urlopen(req, timeout=1).read().decode()
        req = urllib.request.Request(base + "/meta-data/instance-type",
                                     headers={"X-aws-ec2-metadata-token": token})
        return urllib.request.urlopen(req, timeout=1).read().decode().strip() or None
    except Exception:
        return None


def instance_type():
    value = os.environ.get("DEVTIME_INSTANCE_TYPE", "").strip()
    if value:
        return value
    if os.environ.get("DEVTIME_IMDS") == "1":
        value = _imds_instance_type()
        if value:
            return value
    return _read_first_line("/sys/devices/virtual/dmi/id/product_name")


def collect_environment(device, neuronx=None):
    """Versions and host facts as a flat str -> str dict (absent ones skipped)."""
    import torch
    env = {"torch": str(torch.__version__)}
    if neuronx is not None or device == "neuron":
        v = _dist_version("torch-neuronx") or getattr(neuronx, "__version__", None)
        if v:
            env["torch-neuronx"] = str(v)
        for dist in ("neuronx-cc", "libneuronxla"):
            v = _dist_version(dist)
            if v:
                env[dist] = v
        v = _package_version("aws-neuronx-runtime-lib")
        if v:
            env["neuron-runtime"] = v
        v = _read_first_line("/sys/module/neuron/version")
        if v:
            env["driver"] = v
        flags = os.environ.get("NEURON_CC_FLAGS")
        if flags:
            env["neuron_cc_flags"] = flags
    if device == "cuda":
        if torch.version.cuda:
            env["cuda"] = str(torch.version.cuda)
        try:
            cudnn = torch.backends.cudnn.version()
            if cudnn:
                env["cudnn"] = str(cudnn)
        except Exception:
            pass
        line = _read_first_line("/proc/driver/nvidia/version")
        if line:
            # "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug ..."
            parts = line.split("Kernel Module")
            env["driver"] = parts[1].split()[0] if len(parts) > 1 and parts[1].split() else line
        try:
            env["gpu"] = torch.cuda.get_device_name()
        except Exception:
            pass
    env["python"] = platform.python_version()
    env["host"] = socket.gethostname()
    it = instance_type()
    if it:
        env["instance_type"] = it
    return env


# ---------------------------------------------------------------- Neuron capture config

def accepts_keyword(callable_, name):
    """True/False when ``callable_``'s signature names (or cannot take) ``name``; None when
    the signature cannot be read or ends in ``**kwargs`` (then only a call can tell)."""
    try:
        params = inspect.signature(callable_).parameters
    except (TypeError, ValueError):  # builtins / extension types without a signature
        return None
    if name in params and params[name].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                inspect.Parameter.KEYWORD_ONLY):
        return True
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return False


def make_neuron_config(config_cls, modes, out_dir):
    """``config_cls(modes=..., profile_output_dir=..., correlate_device_time=True)`` when the
    installed NeuronConfig accepts that setting -- the one that puts Neuron device time into
    ``key_averages()`` -- else without it.  Returns (config, whether correlation is on)."""
    base = {"modes": modes, "profile_output_dir": out_dir}
    accepted = accepts_keyword(config_cls, "correlate_device_time")
    if accepted is False:
        return config_cls(**base), False
    try:
        return config_cls(correlate_device_time=True, **base), True
    except TypeError:
        if accepted:  # the signature names it: the TypeError is about something else
            raise
        return config_cls(**base), False


# ---------------------------------------------------------------- key_averages

def _first_attr(obj, names):
    for name in names:
        if hasattr(obj, name):
            try:
                return float(getattr(obj, name) or 0.0)
            except (TypeError, ValueError):
                return 0.0
    return 0.0


def key_average_rows(prof):
    rows = []
    for e in prof.key_averages():
        rows.append({
            "name": str(e.key),
            "calls": int(e.count),
            "self_cpu_us": float(e.self_cpu_time_total),
            "cpu_total_us": float(e.cpu_time_total),
            "self_device_us": _first_attr(e, ("self_device_time_total", "self_cuda_time_total")),
            "device_total_us": _first_attr(e, ("device_time_total", "cuda_time_total")),
        })
    rows.sort(key=lambda r: (-r["self_device_us"], -r["self_cpu_us"], r["name"]))
    return rows


# ---------------------------------------------------------------- capture

def _find_framework_trace(out_dir):
    """Newest framework trace NeuronProfiler wrote under out_dir (fallback only)."""
    best = None
    for root, _dirs, files in os.walk(out_dir):
        for fn in files:
            if (fn == "trace.json" and root != out_dir) or fn.startswith("neuron_framework_trace_rank_"):
                path = os.path.join(root, fn)
                mtime = os.path.getmtime(path)
                if best is None or mtime > best[0]:
                    best = (mtime, path)
    return best[1] if best else None


def profile_workload(step_fn, out_dir, steps=DEFAULT_STEPS, device="auto", workload="custom",
                     model_commit=None, wait=DEFAULT_WAIT, warmup=DEFAULT_WARMUP,
                     extra_environment=None):
    """Profile ``step_fn`` (zero-argument callable, one iteration) into ``out_dir``.

    Runs wait + warmup + steps iterations under torch.profiler with
    schedule(wait, warmup, active=steps), calling prof.step() and a device
    synchronize after each.  Writes trace.json, key_averages.json,
    environment.json and run.json (last).  ``extra_environment`` entries are
    added to environment.json.  Returns {"device", "trace", "key_averages",
    "environment", "run", "out_dir"}.
    """
    import torch
    import torch.profiler as tprof

    if not callable(step_fn):
        raise ValueError("step_fn must be callable")
    for label, value, minimum in (("steps", steps, 1), ("wait", wait, 0), ("warmup", warmup, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ValueError("%s must be an integer >= %d, got %r" % (label, minimum, value))
    if isinstance(device, tuple):  # already resolved (device, neuronx) from the CLI
        device, neuronx = device
    else:
        device, neuronx = resolve_device(device)
    sync, sync_desc = _sync_fn(device, neuronx)

    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    trace_path = os.path.join(out_dir, "trace.json")
    state = {"ready": 0, "rows": None, "trace_error": None, "correlate_device_time": None}

    def export_own(prof):
        tmp = os.path.join(out_dir, ".trace.tmp-%d.json" % os.getpid())
        try:
            prof.export_chrome_trace(tmp)
            os.replace(tmp, trace_path)
        except Exception as exc:
            if os.path.exists(tmp):
                os.unlink(tmp)
            state["trace_error"] = exc
        state["rows"] = key_average_rows(prof)
        state["ready"] += 1

    kwargs = {"schedule": tprof.schedule(wait=wait, warmup=warmup, active=steps)}
    if device == "neuron":
        from torch_neuronx.profiling import NeuronConfig, ProfileMode, NeuronProfiler
        cfg, correlated = make_neuron_config(
            NeuronConfig, [ProfileMode.DEVICE, ProfileMode.RUNTIME], out_dir)
        state["correlate_device_time"] = correlated
        neuron_export = NeuronProfiler(cfg).export_trace

        def on_ready(prof):
            neuron_export(prof)
            export_own(prof)
        kwargs.update(activities=[tprof.ProfilerActivity.CPU, tprof.ProfilerActivity.PrivateUse1],
                      experimental_config=cfg, on_trace_ready=on_ready)
    else:
        activities = [tprof.ProfilerActivity.CPU]
        if device == "cuda":
            activities.append(tprof.ProfilerActivity.CUDA)
        kwargs.update(activities=activities, on_trace_ready=export_own)

    started_at = _utc_now()
    with tprof.profile(**kwargs) as prof:
        for _ in range(wait + warmup + steps):
            step_fn()
            if sync is not None:
                sync()
            prof.step()
    if state["ready"] == 0:  # schedule never reached RECORD_AND_SAVE's end; export what we have
        export_own(prof)
    finished_at = _utc_now()

    if not os.path.exists(trace_path):
        found = _find_framework_trace(out_dir) if device == "neuron" else None
        if found is None:
            raise RuntimeError("export_chrome_trace failed: %s" % (state["trace_error"],))
        import shutil
        tmp = trace_path + ".tmp-%d" % os.getpid()
        shutil.copyfile(found, tmp)
        os.replace(tmp, trace_path)

    # key_averages() folds "ProfilerStep#<n>" rows into one "ProfilerStep*" row.
    recorded = sum(r["calls"] for r in state["rows"]
                   if r["name"] == "ProfilerStep*" or r["name"].startswith("ProfilerStep#"))
    if recorded != steps:
        print("warning: expected %d active ProfilerStep events, key_averages has %d"
              % (steps, recorded), file=sys.stderr)

    ka_path = os.path.join(out_dir, "key_averages.json")
    write_json_atomic(ka_path, {"device": device, "torch_version": str(torch.__version__),
                                "rows": state["rows"]})

    env = collect_environment(device, neuronx)
    if model_commit:
        env["model_commit"] = str(model_commit)
    env["workload"] = str(workload)
    env["device"] = device
    env["capture.wait"] = str(wait)
    env["capture.warmup"] = str(warmup)
    env["capture.active"] = str(steps)
    env["capture.synchronized"] = "true" if sync is not None else "false"
    env["capture.sync"] = sync_desc
    env["capture.profiler"] = "torch_neuronx.NeuronProfiler" if device == "neuron" else "torch.profiler"
    if state["correlate_device_time"] is not None:
        env["capture.correlate_device_time"] = "true" if state["correlate_device_time"] else "false"
    for k, v in (extra_environment or {}).items():
        env[str(k)] = str(v)
    env_path = os.path.join(out_dir, "environment.json")
    write_json_atomic(env_path, env)

    run_path = os.path.join(out_dir, "run.json")
    write_json_atomic(run_path, {"workload": str(workload), "device": device, "steps": steps,
                                 "started_at": started_at, "finished_at": finished_at})
    return {"device": device, "out_dir": out_dir, "trace": trace_path, "key_averages": ka_path,
            "environment": env_path, "run": run_path}


# ---------------------------------------------------------------- CLI

class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(message)


def _parser():
    p = _Parser(prog="devtime_harness.py",
                description="Profile a devtime workload and write trace.json, key_averages.json, "
                            "environment.json and run.json into --out.")
    p.add_argument("--workload", help="built-in workload name (see --list)")
    p.add_argument("--out", help="output directory (created if missing)")
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS,
                   help="active (recorded) steps, default %d; wait=%d and warmup=%d run before"
                        % (DEFAULT_STEPS, DEFAULT_WAIT, DEFAULT_WARMUP))
    p.add_argument("--device", choices=DEVICES, default="auto",
                   help="auto: neuron if torch_neuronx is importable, else cuda if available, else cpu")
    p.add_argument("--model-commit", help="model source commit, recorded in environment.json")
    p.add_argument("--list", action="store_true", help="list built-in workloads and exit")
    return p


def _workloads_module():
    if _HERE not in sys.path:
        sys.path.insert(0, _HERE)
    import workloads
    return workloads


def main(argv=None):
    try:
        args = _parser().parse_args(argv)
    except _UsageError as exc:
        _parser().print_usage(sys.stderr)
        print("devtime-harness: error: %s" % exc, file=sys.stderr)
        return EXIT_USAGE

    def fail(code, message):
        print("devtime-harness: error: %s" % message, file=sys.stderr)
        return code

    try:
        wl = _workloads_module()
    except Exception as exc:
        traceback.print_exc()
        return fail(EXIT_ERROR, "cannot import torch / workloads: %s" % exc)

    if args.list:
        width = max(len(n) for n in wl.names())
        for name in wl.names():
            print("%-*s  %s" % (width, name, wl.describe(name)))
        return EXIT_OK
    if not args.workload or not args.out:
        return fail(EXIT_USAGE, "--workload and --out are required (or use --list)")
    if args.workload not in wl.WORKLOADS:
        return fail(EXIT_USAGE, "unknown workload %r; known: %s" % (args.workload, ", ".join(wl.names())))
    if args.steps < 1:
        return fail(EXIT_USAGE, "--steps must be >= 1, got %d" % args.steps)

    try:
        device, neuronx = resolve_device(args.device)
        built = wl.build(args.workload, device)
    except (DeviceUnavailable, wl.WorkloadUnavailable) as exc:
        return fail(EXIT_UNAVAILABLE, str(exc))
    except Exception as exc:
        traceback.print_exc()
        return fail(EXIT_ERROR, "building workload %s on %s failed: %s" % (args.workload, args.device, exc))

    extra = {"workload.dtype": built.dtype}
    try:
        result = profile_workload(built.step, args.out, steps=args.steps, device=(device, neuronx),
                                  workload=args.workload, model_commit=args.model_commit,
                                  extra_environment=extra)
    except Exception as exc:
        traceback.print_exc()
        return fail(EXIT_ERROR, "profiling %s on %s failed: %s" % (args.workload, device, exc))
    print("devtime-harness: %s on %s (%s): %d active steps -> %s"
          % (args.workload, result["device"], built.dtype, args.steps, result["out_dir"]))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
