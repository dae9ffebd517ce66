#!/usr/bin/env python3
"""Lints the Grafana dashboards offline: the cheap rules of grafana/dashboard-linter plus the
structural checks Grafana itself would only show as a broken panel (the list is in
dashboards/README.md). Grafana is not a Debian package and dashboard-linter cannot be built
offline, so this is the check CI runs.

usage: lint_dashboards.py [--promtool /usr/bin/promtool] [DASHBOARD.json ...]
Exit status 1 and one line per problem when anything is wrong.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402

# Grafana unit ids (public/app/core/utils/valueFormats categories, the ones a dashboard here
# may reasonably use). "µs" is Grafana's id for microseconds.
VALID_UNITS = {
    "none", "short", "string", "percent", "percentunit", "bool", "bool_yes_no", "bool_on_off",
    "ns", "µs", "ms", "s", "m", "h", "d", "dtdurationms", "dtdurations", "dthms", "dtdhms",
    "clockms", "clocks", "dateTimeAsIso", "dateTimeAsIsoNoDateIfToday", "dateTimeAsUS",
    "dateTimeFromNow", "dateTimeAsSystem",
    "bytes", "decbytes", "bits", "decbits", "kbytes", "mbytes", "gbytes", "Bps", "binBps",
    "ops", "reqps", "rps", "wps", "iops", "opm", "reqpm", "rpm", "wpm",
    "hertz", "watt", "celsius", "locale", "sci", "hex", "hex0x",
}
PANEL_TYPES = {"timeseries", "stat", "table", "bargauge", "piechart", "row", "text", "gauge",
               "barchart", "state-timeline", "status-history", "heatmap", "histogram"}
NO_DATA_PANELS = {"row", "text"}
GRAFANA_BUILTIN_DS = {"-- Grafana --", "grafana"}
UID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
DS_VAR_RE = re.compile(r"^DS_[A-Z0-9_]+$")
COUNTER_FUNCS = {"rate", "irate", "increase"}


def _ds_type_matches(a, b):
    if a in dashlib.POSTGRES_TYPES and b in dashlib.POSTGRES_TYPES:
        return True
    return a == b


def _walk_strings(node, path=""):
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _walk_strings(value, f"{path}.{key}" if path else key)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk_strings(value, f"{path}[{i}]")


def _enclosing_function(expr, index):
    """Name of the innermost function call whose parentheses enclose expr[index], or ''."""
    depth = 0
    i = index
    while i > 0:
        i -= 1
        if expr[i] == ")":
            depth += 1
        elif expr[i] == "(":
            if depth == 0:
                m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", expr[:i])
                return m.group(1) if m else ""
            depth -= 1
    return ""


def _call_spans(expr, names):
    """[(name, inner text)] of every call of a function in `names`."""
    spans = []
    for m in re.finditer(r"\b(" + "|".join(names) + r")\s*\(", expr):
        spans.append((m.group(1), expr[m.end():dashlib.closing_paren(expr, m.end() - 1)]))
    return spans


def promql_problems(expr):
    """Problems of one PromQL expression (variables not yet substituted)."""
    problems = []
    if not expr.strip():
        return ["empty PromQL expression"]
    for name, inner in _call_spans(expr, ["rate", "irate"]):
        if "[$__rate_interval]" not in inner:
            problems.append(f"{name}() must use [$__rate_interval] (target-rate-interval-rule)")
    stripped = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values are not metric names
    stripped = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1()",
                      stripped)
    for m in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()", stripped):
        name = m.group(1)
        if not (name.startswith("devtime_") or name == "up"):
            continue
        if not dashlib.known_metric(name):
            problems.append(f"unknown metric {name} (not in tests/dashboards/dashlib.py "
                            "KNOWN_METRICS)")
        if name.endswith("_total") or name.endswith("_bucket"):
            if _enclosing_function(stripped, m.start()) not in COUNTER_FUNCS:
                problems.append(f"{name} must be wrapped in rate/irate/increase "
                                "(target-counter-agg-rule)")
    return problems


def lint(dashboard, filename, provisioned, known_uids=None):
    """Every problem of one dashboard as a list of 'file: where: what' strings."""
    out = []

    def problem(where, what):
        out.append(f"{filename}: {where}: {what}")

    known_uids = known_uids or set()
    stem = os.path.splitext(os.path.basename(filename))[0]
    uid = dashboard.get("uid")
    if not isinstance(uid, str) or not UID_RE.match(uid):
        problem("uid", f"missing or malformed uid {uid!r} (stable, lowercase, <= 40 chars)")
    elif uid != f"devtime-{stem}":
        problem("uid", f"uid {uid!r} must be 'devtime-{stem}' (stable: links and alerts use it)")
    if dashboard.get("schemaVersion") != 39:
        problem("schemaVersion", f"must be 39, got {dashboard.get('schemaVersion')!r}")
    if dashboard.get("id") is not None:
        problem("id", "provisioned dashboards carry no numeric id (null or absent)")
    if not str(dashboard.get("title", "")).strip():
        problem("title", "dashboard has no title")
    if dashboard.get("editable") is not False:
        problem("editable", "must be false (uneditable-dashboard: provisioned from git)")
    if not isinstance(dashboard.get("version"), int):
        problem("version", "must be an integer")

    # -- template variables
    variables = {}
    ds_vars = {}
    for var in dashboard.get("templating", {}).get("list", []):
        name = var.get("name", "")
        where = f"variable ${name}"
        if name in variables:
            problem(where, "defined twice")
        variables[name] = var
        if not var.get("label"):
            problem(where, "has no label")
        if var.get("type") == "datasource":
            ds_vars[name] = var.get("query")
            if not DS_VAR_RE.match(name):
                problem(where, "datasource variables are named DS_<NAME>")
            if var.get("query") not in dashlib.PROMETHEUS_TYPES | dashlib.POSTGRES_TYPES:
                problem(where, f"unknown data source plugin {var.get('query')!r}")
            current = (var.get("current") or {}).get("value")
            if current not in provisioned:
                problem(where, f"current value {current!r} is not a provisioned data source uid "
                               f"({', '.join(sorted(provisioned))})")
            elif not _ds_type_matches(provisioned[current], var.get("query")):
                problem(where, f"current value {current!r} is a {provisioned[current]} data "
                               f"source, not {var.get('query')}")
        elif var.get("type") == "query":
            if var.get("refresh") != 2:
                problem(where, "query variables need refresh: 2 (on time range change)")
            if not dashlib.variable_query_text(var).strip():
                problem(where, "has no query")

    def check_datasource(where, ds, allow_builtin=False):
        if not isinstance(ds, dict):
            problem(where, f"datasource must be an object {{type, uid}}, got {ds!r}")
            return None
        uid_ref, ds_type = ds.get("uid", ""), ds.get("type", "")
        if allow_builtin and uid_ref in GRAFANA_BUILTIN_DS:
            return ds_type
        m = re.fullmatch(r"\$\{(\w+)\}|\$(\w+)", uid_ref or "")
        if m:
            name = m.group(1) or m.group(2)
            if name not in ds_vars:
                problem(where, f"data source variable ${name} is not defined")
                return None
            if not _ds_type_matches(ds_vars[name], ds_type):
                problem(where, f"type {ds_type!r} does not match ${name} ({ds_vars[name]})")
            return ds_type
        if uid_ref not in provisioned:
            problem(where, f"data source uid {uid_ref!r} is not provisioned")
        elif not _ds_type_matches(provisioned[uid_ref], ds_type):
            problem(where, f"type {ds_type!r} but {uid_ref!r} is {provisioned[uid_ref]}")
        return ds_type

    for var in variables.values():
        if var.get("type") == "query":
            check_datasource(f"variable ${var.get('name')}", var.get("datasource"))

    # -- annotations
    for anno in dashboard.get("annotations", {}).get("list", []):
        where = f"annotation {anno.get('name')!r}"
        if not anno.get("name"):
            problem(where, "has no name")
        ds_type = check_datasource(where, anno.get("datasource"),
                                   allow_builtin=bool(anno.get("builtIn")))
        if not anno.get("builtIn") and ds_type in dashlib.POSTGRES_TYPES:
            if not (anno.get("target") or {}).get("rawSql", "").strip():
                problem(where, "SQL annotation without target.rawSql")

    # -- panels
    ids = {}
    cells = {}
    for panel in dashlib.iter_panels(dashboard):
        pid = panel.get("id")
        where = f"panel {pid} {panel.get('title')!r}"
        if not isinstance(pid, int):
            problem(where, "panel id must be an integer")
        elif pid in ids:
            problem(where, f"duplicate panel id (also {ids[pid]!r})")
        else:
            ids[pid] = panel.get("title")
        ptype = panel.get("type")
        if ptype not in PANEL_TYPES:
            problem(where, f"unknown panel type {ptype!r}")
        if not str(panel.get("title", "")).strip():
            problem(where, "has no title")
        if ptype != "row" and not str(panel.get("description", "")).strip():
            problem(where, "has no description (panel-title-description-rule)")
        grid = panel.get("gridPos") or {}
        try:
            x, y, w, h = (int(grid[k]) for k in ("x", "y", "w", "h"))
        except (KeyError, TypeError, ValueError):
            problem(where, f"gridPos needs integer x, y, w, h: {grid!r}")
        else:
            if x < 0 or y < 0 or w < 1 or h < 1 or x + w > 24:
                problem(where, f"gridPos {grid} does not fit the 24 columns")
            else:
                for cx in range(x, x + w):
                    for cy in range(y, y + h):
                        if (cx, cy) in cells and cells[(cx, cy)] != pid:
                            problem(where, f"overlaps panel {cells[(cx, cy)]} at x={cx} y={cy}")
                            break
                        cells[(cx, cy)] = pid
                    else:
                        continue
                    break
        if ptype in NO_DATA_PANELS:
            continue
        defaults = (panel.get("fieldConfig") or {}).get("defaults") or {}
        unit = defaults.get("unit")
        if not unit:
            problem(where, "no unit (fieldConfig.defaults.unit; panel-units-rule)")
        elif unit not in VALID_UNITS:
            problem(where, f"unknown unit {unit!r}")
        for override in (panel.get("fieldConfig") or {}).get("overrides", []) or []:
            for prop in override.get("properties", []) or []:
                if prop.get("id") == "unit" and prop.get("value") not in VALID_UNITS:
                    problem(where, f"override unit {prop.get('value')!r} is unknown")
        ds_type = check_datasource(where, panel.get("datasource"))
        targets = panel.get("targets") or []
        if not targets:
            problem(where, "has no targets (panel-no-targets-rule)")
        ref_ids = set()
        for target in targets:
            twhere = f"{where} target {target.get('refId')}"
            if not target.get("refId") or target.get("refId") in ref_ids:
                problem(twhere, "missing or duplicate refId")
            ref_ids.add(target.get("refId"))
            t_type = ds_type
            if "datasource" in target:
                t_type = check_datasource(twhere, target["datasource"])
                if t_type and ds_type and not _ds_type_matches(t_type, ds_type):
                    problem(twhere, f"target data source {t_type} differs from the panel's")
            if t_type in dashlib.PROMETHEUS_TYPES:
                for what in promql_problems(target.get("expr", "")):
                    problem(twhere, what)
            elif t_type in dashlib.POSTGRES_TYPES:
                sql = target.get("rawSql", "")
                if not sql.strip():
                    problem(twhere, "empty rawSql")
                if target.get("rawQuery") is not True or target.get("editorMode") != "code":
                    problem(twhere, "SQL targets are raw (rawQuery: true, editorMode: code)")
                fmt = target.get("format")
                if fmt not in ("table", "time_series"):
                    problem(twhere, f"format must be table or time_series, got {fmt!r}")
                if fmt == "time_series" and not re.search(
                        r'AS\s+"time"|\$__timeGroupAlias\(|\$__time\(', sql, re.I):
                    problem(twhere, 'time_series SQL needs a column named "time"')
                if ";" in sql.rstrip().rstrip(";"):
                    problem(twhere, "one statement per target")

    # -- variables: every reference defined, every variable used
    used = set()
    for path, text in _walk_strings(dashboard):
        if path.startswith("templating.list") and path.endswith((".name", ".label")):
            continue
        for name, fmt in dashlib.variable_references(text):
            if fmt and fmt not in dashlib.KNOWN_FORMATS:
                problem(path, f"unknown variable format :{fmt}")
            if name.startswith("__"):
                continue
            if name not in variables:
                problem(path, f"uses undefined variable ${name}")
            used.add(name)
    for name in variables:
        if name not in used:
            problem(f"variable ${name}", "is defined but never used")

    # -- links to other dashboards name uids that exist
    for path, text in _walk_strings(dashboard):
        if path.endswith("url"):
            for target_uid in re.findall(r"/d/([^/?\s]+)", text):
                if known_uids and target_uid not in known_uids:
                    problem(path, f"links to unknown dashboard uid {target_uid!r}")
    return out


def promtool_problems(exprs, promtool="/usr/bin/promtool"):
    """Parses [(where, expr)] (variables substituted) with `promtool check rules`, each as a
    recording rule; returns a problem line per expression that does not parse."""
    import yaml

    def check(batch, path):
        with open(path, "w") as f:
            yaml.safe_dump({"groups": [{"name": "lint", "rules": [
                {"record": f"lint:expr_{i}", "expr": expr} for i, (_, expr) in batch]}]}, f)
        return subprocess.run([promtool, "check", "rules", path], capture_output=True,
                              text=True)

    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        numbered = list(enumerate(exprs))
        if check(numbered, os.path.join(tmp, "all.yml")).returncode == 0:
            return []
        for i, (where, expr) in numbered:  # one at a time, to say which
            result = check([(i, (where, expr))], os.path.join(tmp, f"expr{i}.yml"))
            if result.returncode != 0:
                message = (result.stderr + result.stdout).strip().splitlines()
                problems.append(f"{where}: PromQL does not parse: "
                                f"{' | '.join(message[-2:])} ({expr})")
    return problems or ["promtool check rules failed on the dashboards' PromQL"]


def lint_all(paths=None, promtool=None):
    paths = paths or dashlib.dashboard_files()
    provisioned = dashlib.provisioned_datasources()
    import json

    boards = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            boards[path] = json.load(f)
    problems = []
    uids = {b.get("uid") for b in boards.values()}
    titles = {}
    for path, board in boards.items():
        name = os.path.relpath(path, dashlib.SOURCE_DIR)
        problems += lint(board, name, provisioned, known_uids=uids)
        if board.get("title") in titles:
            problems.append(f"{name}: title {board.get('title')!r} also used by "
                            f"{titles[board.get('title')]}")
        titles[board.get("title")] = name
    if len(uids) != len(boards):
        problems.append("two dashboards share a uid")
    if promtool:
        exprs = []
        for path, board in boards.items():
            for q in dashlib.queries(board):
                if q.kind == "promql":
                    exprs.append((f"{os.path.basename(path)}: {q.where}",
                                  dashlib.substitute(q.text, dashlib.DEMO_VALUES, "promql")))
        problems += promtool_problems(exprs, promtool)
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--promtool", help="also parse every PromQL expression with promtool")
    parser.add_argument("dashboards", nargs="*")
    args = parser.parse_args()
    problems = lint_all(args.dashboards, args.promtool)
    for p in problems:
        print(p)
    print(f"{len(problems)} problems" if problems else "dashboards: OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
