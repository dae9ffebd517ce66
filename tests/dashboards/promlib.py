"""PromQL and Prometheus helpers for the live dashboard/rule test (prometheus_live_test.py):
the selectors of an expression, Prometheus's HTTP API, the exposition format (parsing a
scrape, writing an OpenMetrics history for backfill) and rule files shortened for a test."""
import json
import math
import os
import re
import urllib.error
import urllib.parse
import urllib.request

import yaml

PROMQL_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                   "group_right", "offset", "bool", "atan2", "inf", "nan", "start", "end"}
PROMQL_AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                       "count_values", "bottomk", "topk", "quantile"}


# ---- PromQL, Prometheus's HTTP API ------------------------------------------------------------

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`'
                    r'|\[[^\]]*\]'
                    r'|\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}'
                    r'|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[a-zA-Z]*'
                    r'|[a-zA-Z_:][a-zA-Z0-9_:]*'
                    r'|\S', re.S)


def selectors(expr):
    """[(metric name, vector selector as written)] of a PromQL expression, e.g.
    ('up', 'up{job="devtime-agent"}'); function names, keywords and the label lists of
    by/without/on/ignoring/group_* are not selectors."""
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", expr)
    tokens = [m.group(0) for m in _TOKEN.finditer(text)]
    found = []
    for i, tok in enumerate(tokens):
        if not re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", tok) or tok.lower() in PROMQL_KEYWORDS:
            continue
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if following == "(" or (tok in PROMQL_AGGREGATIONS and following in ("by", "without")):
            continue  # a function call or an aggregation
        selector = tok + following if following.startswith("{") else tok
        if (tok, selector) not in found:
            found.append((tok, selector))
    return found


class PrometheusError(Exception):
    pass


# Everything here is on loopback: never through an http_proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(url, timeout=10):
    return _OPENER.open(url, timeout=timeout)


class Prometheus:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def get(self, path, **params):
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with http_get(url) as response:
                body = json.load(response)
        except urllib.error.HTTPError as e:  # 400/422: a query that does not parse or fails
            try:
                body = json.load(e)
            except ValueError:
                raise PrometheusError(f"{path}: HTTP {e.code}") from e
        if body.get("status") != "success":
            raise PrometheusError(f"{body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def ready(self):
        try:
            with http_get(self.base + "/-/ready", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def query(self, expr, at=None):
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return self.get("/api/v1/query", **params)

    def query_range(self, expr, start, end, step=1):
        return self.get("/api/v1/query_range", query=expr, start=f"{start:.3f}",
                        end=f"{end:.3f}", step=str(step))

    def has_series(self, expr):
        return bool(self.query(f"count({expr})")["result"])


def numbers(data):
    """The sample values of an instant or range query's result that are numbers (not NaN)."""
    kind, result = data["resultType"], data["result"]
    if kind == "scalar":
        values = [result[1]]
    elif kind == "vector":
        values = [s["value"][1] for s in result]
    elif kind == "matrix":
        values = [v[1] for s in result for v in s["values"]]
    else:
        values = []
    return [float(v) for v in values if not math.isnan(float(v))]


def scrape(port):
    with http_get(f"http://127.0.0.1:{port}/metrics") as response:
        return response.read()


def parse_exposition(text):
    """{name: type} and [(name, {label: value}, value)] of a Prometheus text exposition."""
    types, samples = {}, []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            types[name] = kind
            continue
        if not line.strip() or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)", line)
        if not m:
            raise ValueError(f"cannot parse exposition line {line!r}")
        labels = {k: v for k, v in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")}
        samples.append((m.group(1), labels, float(m.group(3))))
    return types, samples


def openmetrics_history(exposition, extra_labels, timestamps):
    """The gauges of `exposition` as an OpenMetrics text holding each value at `timestamps`
    (labels the exposition does not set taken from `extra_labels`, as honor_labels does)."""
    types, samples = parse_exposition(exposition)
    families = {}
    for name, labels, value in samples:
        if types.get(name) == "gauge" and not math.isnan(value):
            families.setdefault(name, []).append(({**extra_labels, **labels}, value))
    out = []
    for name, series in families.items():
        out.append(f"# TYPE {name} gauge")
        for labels, value in series:
            block = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            out.extend(f"{name}{{{block}}} {value!r} {t:.3f}" for t in timestamps)
    out.append("# EOF")
    return "\n".join(out) + "\n"


def duration_seconds(text):
    return sum(int(n) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800,
                         "y": 31536000}[unit]
               for n, unit in re.findall(r"(\d+)(ms|s|m|h|d|w|y)", str(text)))


def shortened_rules(path, out_dir):
    """A copy of the rule file `path` in `out_dir` with every `for:` longer than 1s set to 1s
    (and group intervals dropped, so rules follow the 1s evaluation_interval)."""
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f) or {}
    for group in doc.get("groups", []) or []:
        group.pop("interval", None)
        for rule in group.get("rules", []) or []:
            if "for" in rule and duration_seconds(rule["for"]) > 1:
                rule["for"] = "1s"
    target = os.path.join(out_dir, os.path.basename(path))
    with open(target, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    return target
