"""Tests for agents/harness (run with /usr/bin/python3 -m unittest discover -s tests/harness -v).

They really run the harness on CPU with a few steps; the whole file takes ~10-20 s.
"""

import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HARNESS_DIR = os.path.join(REPO, "agents", "harness")
HARNESS = os.path.join(HARNESS_DIR, "devtime_harness.py")
sys.path.insert(0, HARNESS_DIR)

try:
    import torch
except ImportError:  # the harness needs torch; say so instead of failing obscurely
    torch = None

OUTPUTS = ("trace.json", "key_averages.json", "environment.json", "run.json")
ROW_KEYS = {"name": str, "calls": int, "self_cpu_us": float, "cpu_total_us": float,
            "self_device_us": float, "device_total_us": float}


def run_harness(*args, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    env.setdefault("OMP_NUM_THREADS", "1")
    return subprocess.run([sys.executable, HARNESS] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, env=env, timeout=120)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def trace_events(trace):
    """Events of a Kineto object trace or of a legacy bare-array trace."""
    if isinstance(trace, list):
        return trace
    return trace["traceEvents"]


def active_profiler_steps(trace):
    return sorted({e["name"] for e in trace_events(trace)
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")})


def parse_utc(text):
    assert text.endswith("Z"), text
    return datetime.datetime.fromisoformat(text[:-1] + "+00:00")


@unittest.skipIf(torch is None, "torch is not importable by %s" % sys.executable)
class HarnessCliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="devtime-harness-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check_outputs(self, out, workload, steps):
        self.assertEqual(sorted(os.listdir(out)), sorted(OUTPUTS), "unexpected files (temp files left?)")

        trace = load(os.path.join(out, "trace.json"))
        self.assertIsInstance(trace, (list, dict))
        self.assertEqual(len(active_profiler_steps(trace)), steps, active_profiler_steps(trace))

        ka = load(os.path.join(out, "key_averages.json"))
        self.assertEqual(set(ka), {"device", "torch_version", "rows"})
        self.assertEqual(ka["device"], "cpu")
        self.assertEqual(ka["torch_version"], str(torch.__version__))
        self.assertTrue(ka["rows"])
        for row in ka["rows"]:
            self.assertEqual(set(row), set(ROW_KEYS))
            for key, typ in ROW_KEYS.items():
                self.assertIsInstance(row[key], typ, (key, row))
            self.assertEqual(row["self_device_us"], 0.0)  # CPU run: no device columns
        step_calls = sum(r["calls"] for r in ka["rows"] if r["name"].startswith("ProfilerStep"))
        self.assertEqual(step_calls, steps)

        env = load(os.path.join(out, "environment.json"))
        self.assertIsInstance(env, dict)
        for k, v in env.items():
            self.assertIsInstance(k, str)
            self.assertIsInstance(v, str, k)
        for key in ("torch", "python", "host", "workload", "device", "capture.wait",
                    "capture.warmup", "capture.active", "capture.synchronized"):
            self.assertIn(key, env)
        self.assertEqual(env["torch"], str(torch.__version__))
        self.assertEqual(env["workload"], workload)
        self.assertEqual(env["device"], "cpu")
        self.assertEqual((env["capture.wait"], env["capture.warmup"], env["capture.active"]),
                         ("2", "1", str(steps)))
        self.assertEqual(env["capture.synchronized"], "false")

        run = load(os.path.join(out, "run.json"))
        self.assertEqual(set(run), {"workload", "device", "steps", "started_at", "finished_at"})
        self.assertEqual((run["workload"], run["device"], run["steps"]), (workload, "cpu", steps))
        self.assertLessEqual(parse_utc(run["started_at"]), parse_utc(run["finished_at"]))
        return ka, env

    def test_list(self):
        r = run_harness("--list")
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in ("rmsnorm-naive", "rmsnorm-fused", "rmsnorm-compiled", "transformer-block"):
            self.assertIn(name, r.stdout)

    def test_rmsnorm_naive(self):
        out = os.path.join(self.tmp, "out")  # does not exist yet: the harness creates it
        r = run_harness("--workload", "rmsnorm-naive", "--out", out, "--steps", "3",
                        "--device", "cpu", "--model-commit", "deadbeef",
                        env_extra={"DEVTIME_INSTANCE_TYPE": "test.large"})
        self.assertEqual(r.returncode, 0, r.stderr)
        ka, env = self.check_outputs(out, "rmsnorm-naive", 3)
        names = {row["name"] for row in ka["rows"]}
        for op in ("aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul"):
            self.assertIn(op, names)
        self.assertEqual(env["model_commit"], "deadbeef")
        self.assertEqual(env["instance_type"], "test.large")
        self.assertIn(env["workload.dtype"], ("bfloat16", "float32"))

    def test_transformer_block(self):
        out = os.path.join(self.tmp, "out")
        r = run_harness("--workload", "transformer-block", "--out", out, "--steps", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        ka, env = self.check_outputs(out, "transformer-block", 1)
        self.assertNotIn("model_commit", env)
        self.assertTrue(any("mm" in row["name"] for row in ka["rows"]), [r["name"] for r in ka["rows"]])

    def test_compiled_unavailable_exit_3(self):
        if hasattr(torch, "compile"):
            self.skipTest("this torch has torch.compile")
        out = os.path.join(self.tmp, "out")
        r = run_harness("--workload", "rmsnorm-compiled", "--out", out)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("torch.compile", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "run.json")))

    def test_fused_unavailable_exit_3(self):
        if hasattr(torch, "rms_norm") or hasattr(torch.nn.functional, "rms_norm"):
            self.skipTest("this torch has rms_norm")
        r = run_harness("--workload", "rmsnorm-fused", "--out", os.path.join(self.tmp, "out"))
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("rms_norm", r.stderr)

    def test_unknown_workload_exit_2(self):
        r = run_harness("--workload", "no-such-workload", "--out", os.path.join(self.tmp, "out"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown workload", r.stderr)

    def test_bad_usage_exit_2(self):
        self.assertEqual(run_harness("--workload", "rmsnorm-naive").returncode, 2)  # no --out
        self.assertEqual(run_harness("--workload", "rmsnorm-naive", "--out", self.tmp,
                                     "--steps", "0").returncode, 2)
        self.assertEqual(run_harness("--device", "tpu", "--list").returncode, 2)


@unittest.skipIf(torch is None, "torch is not importable by %s" % sys.executable)
class ProfileWorkloadApiTest(unittest.TestCase):
    def test_custom_callable(self):
        from devtime_harness import profile_workload
        tmp = tempfile.mkdtemp(prefix="devtime-harness-api-")
        self.addCleanup(shutil.rmtree, tmp, True)
        model = torch.nn.Linear(32, 16)
        x = torch.randn(8, 32)
        calls = []

        def step():
            calls.append(1)
            with torch.no_grad():
                model(x)

        result = profile_workload(step, tmp, steps=2, device="cpu", workload="my-linear",
                                  model_commit="c0ffee")
        self.assertEqual(len(calls), 2 + 1 + 2)  # wait + warmup + active
        self.assertEqual(result["device"], "cpu")
        for name in OUTPUTS:
            self.assertTrue(os.path.isfile(os.path.join(tmp, name)), name)
        self.assertEqual(len(active_profiler_steps(load(result["trace"]))), 2)
        names = {row["name"] for row in load(result["key_averages"])["rows"]}
        self.assertIn("aten::linear", names)
        env = load(result["environment"])
        self.assertEqual((env["workload"], env["model_commit"]), ("my-linear", "c0ffee"))

    def test_bad_arguments(self):
        from devtime_harness import profile_workload
        with self.assertRaises(ValueError):
            profile_workload(lambda: None, tempfile.gettempdir(), steps=0, device="cpu")
        with self.assertRaises(ValueError):
            profile_workload(lambda: None, tempfile.gettempdir(), device="tpu")


class NeuronConfigDetectionTest(unittest.TestCase):
    """make_neuron_config on stand-ins for the NeuronConfig of different TorchNeuron releases."""

    @classmethod
    def setUpClass(cls):
        import devtime_harness
        cls.h = devtime_harness

    def test_passes_correlate_device_time_when_the_signature_names_it(self):
        class NewConfig:
            def __init__(self, modes, profile_output_dir, correlate_device_time=False):
                self.modes, self.out, self.correlate = modes, profile_output_dir, correlate_device_time
        cfg, on = self.h.make_neuron_config(NewConfig, ["DEVICE"], "/out")
        self.assertTrue(on)
        self.assertTrue(cfg.correlate)
        self.assertEqual((cfg.modes, cfg.out), (["DEVICE"], "/out"))

    def test_leaves_it_out_when_the_signature_has_no_such_parameter(self):
        class OldConfig:
            def __init__(self, modes, profile_output_dir):
                self.modes, self.out = modes, profile_output_dir
        cfg, on = self.h.make_neuron_config(OldConfig, ["DEVICE"], "/out")
        self.assertFalse(on)
        self.assertEqual(cfg.out, "/out")

    def test_keyword_catch_all_is_tried_and_a_refusal_falls_back(self):
        class Accepting:
            def __init__(self, **kwargs):
                self.kwargs = kwargs
        cfg, on = self.h.make_neuron_config(Accepting, [], "/out")
        self.assertTrue(on)
        self.assertTrue(cfg.kwargs["correlate_device_time"])

        class Refusing:
            def __init__(self, **kwargs):
                if "correlate_device_time" in kwargs:
                    raise TypeError("unexpected keyword argument 'correlate_device_time'")
                self.kwargs = kwargs
        cfg, on = self.h.make_neuron_config(Refusing, [], "/out")
        self.assertFalse(on)
        self.assertNotIn("correlate_device_time", cfg.kwargs)

    def test_a_named_parameter_that_still_fails_is_not_hidden(self):
        class Broken:
            def __init__(self, modes, profile_output_dir, correlate_device_time=False):
                raise TypeError("modes must be a list of ProfileMode")
        with self.assertRaises(TypeError):
            self.h.make_neuron_config(Broken, [], "/out")

    def test_signature_of_a_dataclass(self):
        import dataclasses

        @dataclasses.dataclass
        class DataConfig:
            modes: list
            profile_output_dir: str
            correlate_device_time: bool = False
        self.assertIs(self.h.accepts_keyword(DataConfig, "correlate_device_time"), True)
        self.assertIs(self.h.accepts_keyword(DataConfig, "something_else"), False)


if __name__ == "__main__":
    unittest.main()
