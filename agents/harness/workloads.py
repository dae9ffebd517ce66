"""Built-in devtime workloads.

Each workload is built for one device ("cpu", "cuda" or "neuron") and returns a
``BuiltWorkload``: a zero-argument ``step`` callable that runs one iteration,
plus the dtype it really uses and any notes (e.g. a bfloat16 -> float32
fallback).  A workload that this torch cannot run raises ``WorkloadUnavailable``
(the CLI turns that into exit code 3).

The RMSNorm trio follows the TorchNeuron profiling guide: input 4x512 bfloat16,
weight of 512, eps 1e-6.
"""

import sys

import torch

RMS_SHAPE = (4, 512)
RMS_EPS = 1e-6


class WorkloadUnavailable(Exception):
    """This workload cannot run with this torch / on this device."""


class BuiltWorkload(object):
    def __init__(self, step, dtype, notes=None):
        self.step = step
        self.dtype = dtype
        self.notes = list(notes or [])


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def rmsnorm_naive(x, w, eps=RMS_EPS):
    """Five ops: pow, mean, add eps, rsqrt, mul by x and weight."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def _fused_rms_norm():
    fn = getattr(torch, "rms_norm", None)
    if fn is not None:
        return fn, "torch.rms_norm"
    fn = getattr(torch.nn.functional, "rms_norm", None)
    if fn is not None:
        return fn, "torch.nn.functional.rms_norm"
    return None, None


def _rms_inputs(device, dtype):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(RMS_SHAPE, generator=gen).to(dtype=dtype).to(device)
    w = torch.ones(RMS_SHAPE[-1], dtype=dtype).to(device)
    return x, w


def _with_bf16_fallback(name, device, make_step):
    """Build with bfloat16, run once; on failure fall back to float32 with a note.

    ``make_step(device, dtype)`` returns the zero-arg step callable.
    """
    notes = []
    try:
        step = make_step(device, torch.bfloat16)
        step()
        return BuiltWorkload(step, _dtype_name(torch.bfloat16), notes)
    except WorkloadUnavailable:
        raise
    except (RuntimeError, TypeError, NotImplementedError) as exc:
        note = ("note: %s: bfloat16 is not supported on %s with torch %s (%s); "
                "falling back to float32" % (name, device, torch.__version__,
                                             str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
        print(note, file=sys.stderr)
        notes.append(note)
    step = make_step(device, torch.float32)
    step()
    return BuiltWorkload(step, _dtype_name(torch.float32), notes)


def build_rmsnorm_naive(device):
    def make(dev, dtype):
        x, w = _rms_inputs(dev, dtype)
        return lambda: rmsnorm_naive(x, w, RMS_EPS)
    return _with_bf16_fallback("rmsnorm-naive", device, make)


def build_rmsnorm_fused(device):
    fn, where = _fused_rms_norm()
    if fn is None:
        raise WorkloadUnavailable(
            "rmsnorm-fused needs torch.rms_norm or torch.nn.functional.rms_norm, "
            "which torch %s does not have (added in torch 2.4)" % torch.__version__)

    def make(dev, dtype):
        x, w = _rms_inputs(dev, dtype)
        return lambda: fn(x, (RMS_SHAPE[-1],), w, RMS_EPS)
    built = _with_bf16_fallback("rmsnorm-fused", device, make)
    built.notes.append("fused op: %s" % where)
    return built


def build_rmsnorm_compiled(device):
    compile_fn = getattr(torch, "compile", None)
    if compile_fn is None:
        raise WorkloadUnavailable(
            "rmsnorm-compiled needs torch.compile, which torch %s does not have "
            "(added in torch 2.0)" % torch.__version__)
    compiled = compile_fn(rmsnorm_naive)

    def make(dev, dtype):
        x, w = _rms_inputs(dev, dtype)
        return lambda: compiled(x, w, RMS_EPS)
    # The first call (in _with_bf16_fallback) triggers compilation, outside the profiler.
    return _with_bf16_fallback("rmsnorm-compiled", device, make)


def build_transformer_block(device):
    torch.manual_seed(0)
    # torch defaults otherwise (dim_feedforward 2048; dropout is off in eval mode)
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, batch_first=True)
    layer = layer.eval().to(device)
    x = torch.randn(4, 128, 256).to(device)

    def step():
        with torch.no_grad():
            return layer(x)
    step()
    return BuiltWorkload(step, _dtype_name(torch.float32))


# name -> (one-line description, builder)
WORKLOADS = {
    "rmsnorm-naive": (
        "RMSNorm 4x512 bf16 written naively: x * rsqrt(x.pow(2).mean(-1) + 1e-6) * w (five ops)",
        build_rmsnorm_naive),
    "rmsnorm-fused": (
        "RMSNorm 4x512 bf16 via torch.rms_norm / F.rms_norm (one fused op; torch >= 2.4)",
        build_rmsnorm_fused),
    "rmsnorm-compiled": (
        "RMSNorm 4x512 bf16, the naive function under torch.compile (torch >= 2.0)",
        build_rmsnorm_compiled),
    "transformer-block": (
        "one nn.TransformerEncoderLayer, d_model 256, 4 heads, batch 4 x seq 128, float32, inference",
        build_transformer_block),
}


def names():
    return sorted(WORKLOADS)


def describe(name):
    return WORKLOADS[name][0]


def build(name, device):
    """Build workload ``name`` for ``device``; raises KeyError or WorkloadUnavailable."""
    return WORKLOADS[name][1](device)
