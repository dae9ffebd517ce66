"""One version of the hunt tests' "compiler" (hunt_workload.py): VERSION and NAIVE are
filled in when the test writes it to compiler-VERSION/rmsnorm_impl.py."""
import math

VERSION = "@VERSION@"
EPS = 1e-6


def fused(state):
    out = []
    w = state["w"]
    for row in state["x"]:
        inv = 1.0 / math.sqrt(sum(v * v for v in row) / len(row) + EPS)
        out.append([v * inv * wi for v, wi in zip(row, w)])
    state["y"] = out


def mul_square(state):
    state["sq"] = [[v * v for v in row] for row in state["x"]]


def mean(state):
    state["m"] = [[sum(row) / len(row)] * len(row) for row in state["sq"]]


def add_eps(state):
    state["a"] = [[v + EPS for v in row] for row in state["m"]]


def rsqrt(state):
    state["r"] = [[1.0 / math.sqrt(v) for v in row] for row in state["a"]]


def mul_scale(state):
    w = state["w"]
    state["y"] = [[v * r * wi for v, r, wi in zip(row, rrow, w)]
                  for row, rrow in zip(state["x"], state["r"])]


def unfused(op):
    """An op of the naive chain: its own pass over memory, and a kernel launch's worth more."""
    def run(state):
        for _ in range(3):
            op(state)
    return run


NAIVE = [("aten::mul", unfused(mul_square)), ("aten::mean", unfused(mean)),
         ("aten::add", unfused(add_eps)), ("aten::rsqrt", unfused(rsqrt)),
         ("aten::mul", unfused(mul_scale))]
OPS = NAIVE if @NAIVE@ else [("aten::rms_norm", fused)]
