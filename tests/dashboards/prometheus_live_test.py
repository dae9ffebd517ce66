#!/usr/bin/env python3
"""Every PromQL expression of the dashboards and the alert rules, evaluated by a real Prometheus
scraping a real collector and a real agent.

The stack (tests/dashboards/stacklib.py, as the SQL test builds it): a fresh database on the
DEVTIME_TEST_DATABASE cluster, a devtime-collector on it (fleet gauges refreshed every 500 ms;
regression notifications pushed to an Alertmanager stand-in in this process, because the
collector registers devtime_notifications_total only when a notification channel is
configured, and the fleet dashboard charts it), the RMSNorm demo
history uploaded by `devtime-agent upload` (the collector's detection opens a critical
regression for rmsnorm/fused), and a devtime-agent daemon with its own /metrics (agent.yaml
metrics_listen) that runs one scheduled job before Prometheus starts and once more while it
scrapes (a counter first seen at 1 has no increase: the second run is what the 24 h
increase panels show).

Prometheus (/usr/bin/prometheus) runs on a free loopback port with a configuration generated
from deploy/prometheus/prometheus.yml: the same scrape jobs (names, honor_labels, relabeling,
service discovery kind) with the targets replaced by this test's collector and agent, scrape
and evaluation every second, and the real rules of deploy/prometheus/rules/ with their `for:`
durations shortened to 1s (`promtool test rules` in test_alerting.py covers the for-semantics;
here it is the expressions and their labels against real series that matter).

Before Prometheus starts, the collector's gauges (a real scrape, with the job and instance
labels Prometheus would add) are backfilled as they were seven days ago with
`promtool tsdb create-blocks-from openmetrics`: "Change vs 7 days ago" divides by
`offset 7d`, which a fresh Prometheus has no data for.

Checks:
  * every dashboard expression (extract_queries.py, demo values rmsnorm / fused /
    trn1.2xlarge) returns data: /api/v1/query for instant targets, /api/v1/query_range for
    time series; "data" means at least one sample that is a number (not NaN);
  * every rule expression evaluates without error; when it is empty (healthy by design, e.g.
    `devtime_database_up == 0`) every metric and every selector it names has series;
  * DevtimeRegressionOpen fires for rmsnorm/fused, severity critical (/api/v1/alerts);
  * `promtool check metrics` passes on a real scrape of the collector and of the agent, lint
    included (see test_metrics_pass_promtool_check);
  * honor_labels keeps devtime's own `job` label.
Expressions without data are retried until --settle seconds have passed; every failing one is
reported, with its dashboard panel or rule, in one assertion message, and a failure prints the
logs of the collector, the agent and Prometheus.

usage: prometheus_live_test.py --collector BIN --agent BIN --ctl BIN
                               [--prometheus /usr/bin/prometheus] [--promtool /usr/bin/promtool]
                               [--settle 45] [-v]
needs: DEVTIME_TEST_DATABASE (deploy/test.sh sets it), psql, Debian's prometheus package
"""
import argparse
import glob
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402
import stacklib  # noqa: E402
from promlib import (Prometheus, PrometheusError, http_get, numbers, openmetrics_history,  # noqa: E402
                     parse_exposition, scrape, selectors, shortened_rules)
from stacklib import wait_for  # noqa: E402

ARGS = None
HERE = os.path.dirname(os.path.abspath(__file__))
PROMETHEUS_YML = os.path.join(dashlib.SOURCE_DIR, "deploy", "prometheus", "prometheus.yml")
EXTRACT_QUERIES = os.path.join(HERE, "extract_queries.py")
COLLECTOR_JOB = "devtime-collector"  # the scrape jobs of prometheus.yml
AGENT_JOB = "devtime-agent"
REGRESSION = {"alertname": "DevtimeRegressionOpen", "model": "rmsnorm", "workload": "fused",
              "instance_type": "trn1.2xlarge", "severity": "critical"}
BACKFILL_AGO = 7 * 86400  # seconds: what `offset 7d` reads
def prometheus_config(deployed, out_dir, targets):
    """Writes out_dir/prometheus.yml: `deployed` (deploy/prometheus/prometheus.yml) with
    scrape and evaluation every 1s, its rule files copied by shortened_rules, no
    Alertmanager (the test reads alerts from /api/v1/alerts), and each scrape job's targets
    replaced by targets[job_name] (static_configs stay static, file_sd_configs read a targets
    file in out_dir). Every other setting of a scrape job (honor_labels, relabel_configs,
    metrics_path, ...) is kept as deployed. Returns the path."""
    with open(deployed, encoding="utf-8") as f:
        config = yaml.safe_load(f)
    config.setdefault("global", {}).update(scrape_interval="1s", evaluation_interval="1s",
                                           scrape_timeout="1s")
    rules_dir = os.path.join(out_dir, "rules")
    os.makedirs(rules_dir, exist_ok=True)
    rule_files = []
    for pattern in config.get("rule_files", []) or []:
        matched = sorted(glob.glob(os.path.join(os.path.dirname(deployed), pattern)))
        if not matched:
            raise RuntimeError(f"{deployed}: rule_files {pattern!r} matches no file")
        # The real rules, `for:` shortened to 1s: the for-semantics are promtool test rules'
        # business (test_alerting.py); a 5m `for:` would not fire within this test.
        rule_files += [shortened_rules(path, rules_dir) for path in matched]
    config["rule_files"] = rule_files
    config.pop("alerting", None)
    jobs = [sc["job_name"] for sc in config.get("scrape_configs", [])]
    if sorted(jobs) != sorted(targets):
        raise RuntimeError(f"{deployed} scrapes {jobs}; this test provides {sorted(targets)}: "
                           "teach the test the new job")
    for sc in config["scrape_configs"]:
        target = targets[sc["job_name"]]
        for key in ("scrape_interval", "scrape_timeout"):
            if key in sc:
                sc[key] = "1s"
        if sc.get("file_sd_configs"):
            path = os.path.join(out_dir, f"targets-{sc['job_name']}.yml")
            with open(path, "w") as f:
                yaml.safe_dump([{"targets": [target]}], f)
            sc["file_sd_configs"] = [{**sc["file_sd_configs"][0], "files": [path]}]
            sc.pop("static_configs", None)
        else:
            first = (sc.get("static_configs") or [{}])[0]
            sc["static_configs"] = [{**first, "targets": [target]}]
        unknown = set(sc) & {"dns_sd_configs", "kubernetes_sd_configs", "consul_sd_configs",
                             "ec2_sd_configs", "http_sd_configs"}
        if unknown:
            raise RuntimeError(f"{deployed}: job {sc['job_name']} uses {sorted(unknown)}: "
                               "teach the test to replace its targets")
    path = os.path.join(out_dir, "prometheus.yml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    return path


class AlertmanagerStandIn:
    """Answers the collector's Alertmanager pushes (POST /api/v2/alerts) with 200, so that its
    notifier runs and devtime_notifications_total has series."""

    def __init__(self):
        posts = self.posts = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                posts.append((self.path, body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# ---- the stack -------------------------------------------------------------------------------

class LiveStack:
    """stacklib.Stack plus Prometheus (see the module's docstring for the order of things)."""

    def __init__(self, args):
        self.args = args
        self.alertmanager = AlertmanagerStandIn()
        try:
            self.stack = stacklib.Stack(args.collector, args.agent, args.ctl,
                                        prefix="devtime-dash-prom-")
        except BaseException:
            self.alertmanager.close()
            raise
        self.prometheus = self.prometheus_process = None

    def logs(self):
        parts = []
        for name in ("collector", "agent", "prometheus"):
            parts.append(f"---- {name} log (last lines) ----\n{self.stack.tail(name, 40)}")
        return "\n".join(parts)

    def up(self):
        s = self.stack
        s.start_collector(["--metrics-refresh-ms", "500", "--alertmanager-url",
                           self.alertmanager.url, "--notify-every", "1"])
        s.upload_demo()

        def regression_open():
            # devtimectl lists it, and the collector's gauges (backfilled below) export it.
            s.check_alive()
            wanted = {k: v for k, v in REGRESSION.items() if k != "alertname"}
            _, samples = parse_exposition(scrape(s.metrics_port).decode())
            exported = any(name == "devtime_regressions_open" and value >= 1 and
                           all(labels.get(k) == v for k, v in wanted.items())
                           for name, labels, value in samples)
            return exported and re.search(r"\bopen\s+critical\s+rmsnorm / fused\b",
                                          s.ctl("regressions", "list"))

        wait_for(regression_open, 60, lambda: "the collector to open and export the critical "
                 "rmsnorm/fused regression (devtimectl regressions list:\n"
                 + s.ctl("regressions", "list") + ")")
        s.apply_job()
        s.start_agent(metrics_port=stacklib.free_port())
        s.run_job()  # the agent has run its job once before Prometheus starts

        targets = {COLLECTOR_JOB: f"127.0.0.1:{s.metrics_port}",
                   AGENT_JOB: f"127.0.0.1:{s.agent_metrics_port}"}
        tsdb = s.path("tsdb")
        self.backfill(tsdb, targets[COLLECTOR_JOB])
        config = prometheus_config(PROMETHEUS_YML, s.path("prometheus"), targets)
        check = subprocess.run([self.args.promtool, "check", "config", config],
                               capture_output=True, text=True, timeout=60)
        if check.returncode != 0:
            raise RuntimeError(f"promtool check config {config}:\n{check.stdout}{check.stderr}")
        port = stacklib.free_port()
        self.started_at = time.time()
        self.prometheus_process = s.start("prometheus", [
            self.args.prometheus, f"--config.file={config}", f"--storage.tsdb.path={tsdb}",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=info"])
        self.prometheus = Prometheus(port)

        def prometheus_ready():
            if self.prometheus_process.poll() is not None:
                raise RuntimeError("prometheus exited:\n" + s.tail("prometheus"))
            return self.prometheus.ready()

        wait_for(prometheus_ready, 60, "Prometheus to be ready")

        def targets_up():
            s.check_alive()
            active = self.prometheus.get("/api/v1/targets", state="active")["activeTargets"]
            health = {(t["scrapePool"], t["labels"].get("instance")): t["health"]
                      for t in active}
            self.target_health = health
            return all(health.get((job, target)) == "up" for job, target in targets.items())

        wait_for(targets_up, 60, lambda: f"both scrape targets to be up: {self.target_health}")
        # The second run, while Prometheus watches: the agent's counters and the collector's
        # ingest and detection histograms change under its eyes.
        wait_for(lambda: self.prometheus.has_series("devtime_agent_jobs_total"), 30,
                 "the agent's job counter in Prometheus")
        s.run_job()

    def backfill(self, tsdb, collector_instance):
        """The collector's gauges, as scraped now, stored as they were BACKFILL_AGO ago for
        ten minutes around that moment (15 s apart), with the labels the scrape adds."""
        now = time.time()
        times = [now - BACKFILL_AGO + offset for offset in range(-300, 301, 15)]
        text = openmetrics_history(scrape(self.stack.metrics_port).decode(),
                                   {"job": COLLECTOR_JOB, "instance": collector_instance}, times)
        source = self.stack.path("backfill.om.txt")
        with open(source, "w") as f:
            f.write(text)
        os.makedirs(tsdb, exist_ok=True)
        result = subprocess.run([self.args.promtool, "tsdb", "create-blocks-from", "openmetrics",
                                 source, tsdb], capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise RuntimeError("promtool tsdb create-blocks-from openmetrics failed:\n"
                               + result.stdout + result.stderr)

    def down(self):
        try:
            self.stack.down()
        finally:
            self.alertmanager.close()


def extracted_queries():
    """extract_queries.py's output for the demo values."""
    argv = [sys.executable, EXTRACT_QUERIES]
    for key, value in dashlib.DEMO_VALUES.items():
        argv += ["--set", f"{key}={value}"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(result.stdout)


# ---- the tests -------------------------------------------------------------------------------

class PrometheusLiveTest(unittest.TestCase):
    live = None

    @classmethod
    def setUpClass(cls):
        for tool in (ARGS.prometheus, ARGS.promtool):
            if not os.access(tool, os.X_OK):
                raise RuntimeError(f"{tool} is missing: deploy/install-deps.sh installs "
                                   "Debian's prometheus package")
        cls.live = LiveStack(ARGS)
        try:
            cls.live.up()
        except BaseException:
            print(cls.live.logs(), file=sys.stderr)
            cls.live.down()
            raise
        cls.prom = cls.live.prometheus
        cls.queries = extracted_queries()

    @classmethod
    def tearDownClass(cls):
        if cls.live:
            cls.live.down()

    def fail_with_logs(self, message):
        self.fail(message + "\n\n" + self.live.logs())

    def missing_selectors(self, expr):
        """The metric names and selectors of `expr` without any series in Prometheus."""
        missing = []
        for name, selector in selectors(expr):
            if not self.prom.has_series(f'{{__name__="{name}"}}'):
                missing.append(name)
            elif selector != name and not self.prom.has_series(selector):
                missing.append(selector)
        return list(dict.fromkeys(missing))

    def test_expressions_were_extracted(self):
        sources = {q["source"] for q in self.queries}
        self.assertIn("dashboards/model.json", sources)
        self.assertIn("dashboards/fleet.json", sources)
        self.assertTrue(any(s.startswith("deploy/prometheus/rules/") for s in sources))

    def test_every_dashboard_expression_has_data(self):
        pending = {f"{q['source']}: {q['where']}": q for q in self.queries
                   if q["source"].startswith("dashboards/")}
        self.assertTrue(pending)
        total, errors, passed = len(pending), {}, []
        deadline = time.monotonic() + ARGS.settle
        while pending:
            for where, q in list(pending.items()):
                try:
                    if q["instant"]:
                        data = self.prom.query(q["query"])
                    else:  # a time series panel: Grafana asks for a range
                        data = self.prom.query_range(q["query"], self.live.started_at,
                                                     time.time())
                except PrometheusError as e:
                    errors[where] = f"{where}: the query fails: {e}\n    {q['query']}"
                    del pending[where]
                    continue
                if numbers(data):
                    passed.append(where)
                    del pending[where]
            if not pending or time.monotonic() > deadline:
                break
            time.sleep(1)
        problems = list(errors.values())
        for where, q in pending.items():
            missing = self.missing_selectors(q["query"])
            why = (f"no series for {', '.join(missing)}" if missing else
                   "every selector has series, the expression's result has none (or only NaN)")
            problems.append(f"{where}: no data within {ARGS.settle:g} s ({why})\n"
                            f"    {'instant' if q['instant'] else 'range'}: {q['query']}")
        if ARGS.verbose:
            for where in sorted(passed):
                print(f"DATA: {where}", file=sys.stderr)
        if problems:
            self.fail_with_logs(f"{len(problems)} of {total} dashboard expressions fail:\n"
                                + "\n".join(problems))

    def test_every_rule_expression_evaluates(self):
        rules = [q for q in self.queries if q["source"].startswith("deploy/prometheus/rules/")]
        self.assertTrue(rules)
        problems = []
        for q in rules:
            where = f"{q['source']}: {q['where']}"
            try:
                data = self.prom.query(q["query"])
            except PrometheusError as e:
                problems.append(f"{where}: the expression fails: {e}\n    {q['query']}")
                continue
            found = bool(data["result"])
            if not found:  # empty while healthy, by design: its inputs must exist
                missing = self.missing_selectors(q["query"])
                if missing:
                    problems.append(f"{where}: empty, and no series for {', '.join(missing)}"
                                    f"\n    {q['query']}")
                    continue
            if ARGS.verbose:
                print(f"RULE {'non-empty' if found else 'empty, inputs present'}: {where}",
                      file=sys.stderr)
        if problems:
            self.fail_with_logs(f"{len(problems)} of {len(rules)} rule expressions fail:\n"
                                + "\n".join(problems))

    def test_regression_alert_fires(self):
        seen = []

        def firing():
            alerts = self.prom.get("/api/v1/alerts")["alerts"]
            seen[:] = [(a["labels"], a["state"]) for a in alerts]
            return any(a["state"] == "firing" and
                       all(a["labels"].get(k) == v for k, v in REGRESSION.items())
                       for a in alerts)

        try:
            wait_for(firing, ARGS.settle, "the alert")
        except TimeoutError:
            self.fail_with_logs(f"{REGRESSION} is not firing within {ARGS.settle:g} s; "
                                f"alerts: {seen}")

    def test_honor_labels_keeps_devtimes_job_label(self):
        # The collector's job gauges keep job="<devtime job>"; `up` keeps the scrape job's.
        self.assertTrue(self.prom.has_series(
            f'devtime_job_slots_recent{{job="{stacklib.JOB}"}}'))
        self.assertTrue(self.prom.has_series(
            f'devtime_agent_jobs_total{{job="{stacklib.JOB}"}}'))
        self.assertFalse(self.prom.has_series('{exported_job!=""}'))
        self.assertTrue(self.prom.has_series(f'up{{job="{COLLECTOR_JOB}"}} == 1'))
        self.assertTrue(self.prom.has_series(f'up{{job="{AGENT_JOB}"}} == 1'))

    def test_metrics_pass_promtool_check(self):
        # Lint problems fail too (promtool exits 3 on them, 1 on a parse error): promlint's
        # rules (counters end in _total, base units, HELP on every family, no reserved
        # suffixes) are the conventions the dashboards' PromQL relies on, both endpoints pass
        # them cleanly, so any output here is a new metric breaking them.
        stack = self.live.stack
        for name, port in (("collector", stack.metrics_port),
                           ("agent", stack.agent_metrics_port)):
            with self.subTest(endpoint=name):
                body = scrape(port)
                self.assertIn(b"devtime_", body)
                result = subprocess.run([ARGS.promtool, "check", "metrics"], input=body,
                                        capture_output=True, timeout=60)
                output = (result.stdout + result.stderr).decode(errors="replace").strip()
                self.assertEqual((result.returncode, output), (0, ""),
                                 f"promtool check metrics on the {name}'s /metrics "
                                 f"(127.0.0.1:{port}): exit {result.returncode}\n{output}")


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collector", required=True, help="devtime-collector executable")
    parser.add_argument("--agent", required=True, help="devtime-agent executable")
    parser.add_argument("--ctl", required=True, help="devtimectl executable")
    parser.add_argument("--prometheus", default="/usr/bin/prometheus")
    parser.add_argument("--promtool", default="/usr/bin/promtool")
    parser.add_argument("--settle", type=float, default=45,
                        help="seconds to wait for expressions to return data / alerts to fire")
    parser.add_argument("--verbose", "-v", action="store_true")
    ARGS, rest = parser.parse_known_args()
    # The collector's notifier (libcurl) must reach the Alertmanager stand-in directly too.
    for variable in ("no_proxy", "NO_PROXY"):
        os.environ[variable] = ",".join(filter(None, [os.environ.get(variable),
                                                      "127.0.0.1", "localhost"]))
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2 if ARGS.verbose else 1)


if __name__ == "__main__":
    main()
