"""What the dashboard tests share: finding the dashboards, their queries, and Grafana's
variable and macro substitution (the subset the devtime dashboards use).

A query is a PromQL expression or a PostgreSQL statement found in a panel target, an annotation
or a template variable. `substitute` replaces template variables the way Grafana does for the
formats we use; `expand_sql_macros` replaces the PostgreSQL data source's $__ macros for a fixed
time range, and refuses any macro it does not know (so a dashboard cannot use one the SQL test
would not exercise).
"""
import datetime
import glob
import json
import os
import re

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DASHBOARD_DIR = os.path.join(SOURCE_DIR, "dashboards")
PROVISIONING_DIR = os.path.join(DASHBOARD_DIR, "provisioning")
RULES_GLOB = os.path.join(SOURCE_DIR, "deploy", "prometheus", "rules", "*.yml")

PROMETHEUS_TYPES = {"prometheus"}
POSTGRES_TYPES = {"grafana-postgresql-datasource", "postgres"}

# Values the template variables take in the tests: the demo history's regressed workload
# (deploy/demo/make_history.py: rmsnorm/fused loses its fusion on 2026-11-25).
DEMO_VALUES = {"model": "rmsnorm", "workload": "fused", "instance_type": "trn1.2xlarge"}

# Grafana's interval variables, as the PromQL checks substitute them.
PROMQL_BUILTINS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1d",
                   "__interval_ms": "60000", "__range_s": "86400", "__range_ms": "86400000"}

# Every metric the dashboards and rules may name: the collector's (services/collector/metrics/:
# collector_metrics.h, fleet_metrics.h), the agent's (agents/daemon/agent_metrics.h) and Prometheus's own `up`.
HISTOGRAMS = {"devtime_ingest_duration_seconds", "devtime_detection_duration_seconds",
              "devtime_agent_job_duration_seconds"}
KNOWN_METRICS = HISTOGRAMS | {
    "up",
    # collector
    "devtime_ingest_runs_total", "devtime_database_up", "devtime_schema_version",
    "devtime_build_info", "devtime_auth_failures_total", "devtime_detection_runs_total",
    "devtime_hunts_started_total", "devtime_hunts_finished_total", "devtime_hunt_runs_total",
    "devtime_notifications_total",
    # collector, the fleet's state read from PostgreSQL
    "devtime_step_seconds", "devtime_op_self_seconds_per_step", "devtime_layer_seconds_per_step",
    "devtime_latest_run_timestamp_seconds", "devtime_regressions_open",
    "devtime_regressions_suspected", "devtime_job_last_success_timestamp_seconds",
    "devtime_job_slots_recent", "devtime_agent_last_seen_timestamp_seconds",
    "devtime_agent_connected",
    # agent
    "devtime_agent_jobs_total", "devtime_agent_spool_runs", "devtime_agent_spool_bytes",
    "devtime_agent_spool_full_total", "devtime_agent_upload_retries_total",
    "devtime_agent_last_success_timestamp_seconds", "devtime_agent_collector_connected",
}


def known_metric(name):
    if name in KNOWN_METRICS:
        return True
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[: -len(suffix)] in HISTOGRAMS:
            return True
    return False


def dashboard_files(directory=DASHBOARD_DIR):
    return sorted(glob.glob(os.path.join(directory, "*.json")))


def load_dashboards(directory=DASHBOARD_DIR):
    """{file name: dashboard JSON} for every *.json directly in `directory`."""
    boards = {}
    for path in dashboard_files(directory):
        with open(path, encoding="utf-8") as f:
            boards[os.path.basename(path)] = json.load(f)
    return boards


def iter_panels(dashboard):
    """Every panel, including those inside (collapsed) rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        for inner in panel.get("panels", []) or []:
            yield inner


def datasource_kind(datasource, dashboard):
    """'promql', 'sql' or None for a panel/target/variable datasource reference."""
    if not isinstance(datasource, dict):
        return None
    kind = datasource.get("type", "")
    uid = datasource.get("uid", "")
    match = re.fullmatch(r"\$\{?(\w+)\}?", uid or "")
    if match:  # a datasource variable: its plugin id is the variable's query
        for var in dashboard.get("templating", {}).get("list", []):
            if var.get("type") == "datasource" and var.get("name") == match.group(1):
                kind = var.get("query", kind)
    if kind in PROMETHEUS_TYPES:
        return "promql"
    if kind in POSTGRES_TYPES:
        return "sql"
    return None


class Query:
    """One query of a dashboard: `kind` is 'promql' or 'sql'; `where` says where it is."""

    def __init__(self, kind, text, where, instant=False, source=""):
        self.kind, self.text, self.where, self.instant, self.source = (
            kind, text, where, instant, source)

    def __repr__(self):
        return f"Query({self.kind}, {self.where})"


def variable_query_text(var):
    query = var.get("query")
    if isinstance(query, dict):
        return query.get("query") or query.get("rawSql") or ""
    return query or ""


def queries(dashboard, source=""):
    """Every query of a dashboard, in a stable order: variables, annotations, panels."""
    found = []
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        kind = datasource_kind(var.get("datasource"), dashboard)
        found.append(Query(kind, variable_query_text(var), f"variable ${var.get('name')}",
                           source=source))
    for anno in dashboard.get("annotations", {}).get("list", []):
        if anno.get("builtIn"):
            continue
        kind = datasource_kind(anno.get("datasource"), dashboard)
        target = anno.get("target") or {}
        text = target.get("rawSql") if kind == "sql" else (target.get("expr") or anno.get("expr"))
        if kind == "sql" and not text:
            text = anno.get("rawQuery")  # the pre-10 place of an SQL annotation query
        found.append(Query(kind, text or "", f"annotation {anno.get('name')!r}", source=source))
    for panel in iter_panels(dashboard):
        for target in panel.get("targets", []) or []:
            kind = datasource_kind(target.get("datasource") or panel.get("datasource"), dashboard)
            text = target.get("rawSql") if kind == "sql" else target.get("expr")
            found.append(Query(kind, text or "",
                               f"panel {panel.get('id')} {panel.get('title')!r} target "
                               f"{target.get('refId')}",
                               instant=bool(target.get("instant")) and not target.get("range"),
                               source=source))
    return found


# ---- template variables --------------------------------------------------------------------

VARIABLE_RE = re.compile(
    r"\$\{(?P<braced>\w+)(?P<path>(?:\.[^}:]+|\[[^\]]*\])*)(?::(?P<fmt>\w+))?\}"
    r"|\[\[(?P<bracket>\w+)(?::(?P<bfmt>\w+))?\]\]"
    r"|\$(?P<plain>\w+)")

KNOWN_FORMATS = {"sqlstring", "percentencode", "raw", "regex", "csv", "json", "pipe",
                 "doublequote", "singlequote", "text", "queryparam", "lucene", "glob",
                 "distributed", "date", "html"}


def variable_references(text):
    """[(name, format or None)] of every $var, ${var}, ${var:fmt} and [[var]] in `text`."""
    refs = []
    for m in VARIABLE_RE.finditer(text or ""):
        name = m.group("braced") or m.group("bracket") or m.group("plain")
        refs.append((name, m.group("fmt") or m.group("bfmt")))
    return refs


def sql_string(value):
    return "'" + str(value).replace("'", "''") + "'"


def substitute(text, values, kind):
    """Replaces template variables by `values` as Grafana interpolates them for single-value
    variables: raw by default, `sqlstring` quoted for SQL. $__ builtins are left for the
    data source (PromQL intervals are replaced by PROMQL_BUILTINS for kind 'promql')."""

    def replace(m):
        name = m.group("braced") or m.group("bracket") or m.group("plain")
        fmt = m.group("fmt") or m.group("bfmt")
        if name.startswith("__"):
            if kind == "promql" and name in PROMQL_BUILTINS:
                return PROMQL_BUILTINS[name]
            return m.group(0)
        if name not in values:
            raise KeyError(f"no value for template variable ${name}")
        value = values[name]
        if fmt == "sqlstring":
            return sql_string(value)
        if fmt in (None, "raw", "text"):
            return str(value)
        if fmt == "regex":
            return re.escape(str(value))
        if fmt == "doublequote":
            return '"' + str(value).replace('"', '\\"') + '"'
        if fmt == "singlequote":
            return "'" + str(value).replace("'", "\\'") + "'"
        raise KeyError(f"format :{fmt} of ${name} is not supported by the tests")

    return VARIABLE_RE.sub(replace, text or "")


def closing_paren(text, start):
    """Index of the ")" that closes the "(" at text[start]; len(text) when none does."""
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] == "("
        depth -= text[i] == ")"
        if depth == 0:
            return i
    return len(text)


# ---- the PostgreSQL data source's macros ---------------------------------------------------

def _split_args(text):
    args, depth, current = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            args.append(current.strip())
            current = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        current += ch
    if current.strip():
        args.append(current.strip())
    return args


def _seconds(interval):
    m = re.fullmatch(r"'?(\d+)(ms|s|m|h|d|w)'?", interval.strip())
    if not m:
        raise ValueError(f"interval {interval!r} is not understood")
    n, unit = int(m.group(1)), m.group(2)
    return n * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[unit]


def expand_sql_macros(sql, time_from, time_to):
    """Expands $__time, $__timeFilter, $__timeFrom, $__timeTo, $__timeGroup,
    $__timeGroupAlias and $__unixEpochFilter as Grafana's PostgreSQL data source does, for the
    range [time_from, time_to] (aware datetimes). Raises ValueError on any other $__ macro."""

    def rfc3339(t):
        return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    out, pos = "", 0
    for m in re.finditer(r"\$__(\w+)", sql):
        if m.start() < pos:
            continue
        name = m.group(1)
        out += sql[pos:m.start()]
        args, end = [], m.end()
        if end < len(sql) and sql[end] == "(":
            i = closing_paren(sql, end)
            if i == len(sql):
                raise ValueError(f"unclosed ( after $__{name}")
            args = _split_args(sql[end + 1:i])
            end = i + 1
        if name == "timeFilter":
            out += f"{args[0]} BETWEEN '{rfc3339(time_from)}' AND '{rfc3339(time_to)}'"
        elif name == "timeFrom":
            out += f"'{rfc3339(time_from)}'"
        elif name == "timeTo":
            out += f"'{rfc3339(time_to)}'"
        elif name == "time":
            out += f'{args[0]} AS "time"'
        elif name in ("timeGroup", "timeGroupAlias"):
            seconds = _seconds(args[1])
            out += f"floor(extract(epoch from {args[0]})/{seconds:g})*{seconds:g}"
            if name == "timeGroupAlias":
                out += ' AS "time"'
        elif name == "unixEpochFilter":
            out += (f"{args[0]} >= {int(time_from.timestamp())} AND "
                    f"{args[0]} <= {int(time_to.timestamp())}")
        else:
            raise ValueError(f"SQL macro $__{name} is not supported by the dashboard tests")
        pos = end
    return out + sql[pos:]


# ---- provisioning --------------------------------------------------------------------------

def provisioned_datasources(directory=os.path.join(PROVISIONING_DIR, "datasources")):
    """{uid: type} of every data source the provisioning YAML defines."""
    import yaml  # python3-yaml (a dependency of Debian's python3-torch)

    found = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.yaml")) +
                       glob.glob(os.path.join(directory, "*.yml"))):
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
        for ds in doc.get("datasources", []) or []:
            found[ds.get("uid")] = ds.get("type")
    return found


def load_rules(pattern=RULES_GLOB):
    """[(file, group, rule)] of every Prometheus rule."""
    import yaml

    rules = []
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
        for group in doc.get("groups", []) or []:
            for rule in group.get("rules", []) or []:
                rules.append((path, group.get("name"), rule))
    return rules
