#!/usr/bin/env python3
"""Prints every PromQL expression of the dashboards and the Prometheus rules as JSON, with the
template variables substituted, for tests that evaluate them against a real Prometheus.

usage: extract_queries.py [--set model=rmsnorm --set workload=fused ...] [--kind promql|sql|all]

Output: a JSON array of objects
  {"source": "dashboards/model.json" | "deploy/prometheus/rules/devtime.rules.yml",
   "where":  "panel 2 'Device time per step, latest run' target A" | "alert DevtimeJobFailing",
   "kind":   "promql" (or "sql" with --kind sql|all),
   "instant": true when the panel asks for an instant query (rules: always true),
   "query":  the expression with variables substituted ($__rate_interval -> 5m,
             $__interval -> 1m, $__range -> 1d; SQL keeps its $__ macros),
   "raw":    the expression as written}
Variables default to the demo history's values (dashlib.DEMO_VALUES).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402


def extract(values, kinds=("promql",)):
    out = []
    for name, board in dashlib.load_dashboards().items():
        source = os.path.relpath(os.path.join(dashlib.DASHBOARD_DIR, name), dashlib.SOURCE_DIR)
        for q in dashlib.queries(board, source):
            if q.kind not in kinds:
                continue
            out.append({"source": source, "where": q.where, "kind": q.kind,
                        "instant": q.instant, "query": dashlib.substitute(q.text, values, q.kind),
                        "raw": q.text})
    if "promql" in kinds:
        for path, group, rule in dashlib.load_rules():
            where = f"alert {rule['alert']}" if "alert" in rule else f"record {rule['record']}"
            out.append({"source": os.path.relpath(path, dashlib.SOURCE_DIR),
                        "where": f"group {group}: {where}", "kind": "promql", "instant": True,
                        "query": rule["expr"].strip(), "raw": rule["expr"]})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="VAR=VALUE",
                        help="a template variable's value (default: the demo values)")
    parser.add_argument("--kind", choices=["promql", "sql", "all"], default="promql")
    args = parser.parse_args()
    values = dict(dashlib.DEMO_VALUES)
    for item in args.set:
        key, _, value = item.partition("=")
        values[key] = value
    kinds = ("promql", "sql") if args.kind == "all" else (args.kind,)
    json.dump(extract(values, kinds), sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
