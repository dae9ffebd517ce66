#!/usr/bin/env python3
"""Prometheus and Alertmanager configuration: `promtool check config`, `promtool check rules`,
`promtool test rules` (every alert tested firing and not firing), `amtool check-config` and
the routing of critical alerts to the pager.

usage: test_alerting.py [-v]     (needs /usr/bin/promtool and /usr/bin/amtool: Debian's
                                  prometheus and prometheus-alertmanager)
"""
import glob
import os
import re
import subprocess
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402
import lint_dashboards  # noqa: E402

DEPLOY = os.path.join(dashlib.SOURCE_DIR, "deploy")
PROMETHEUS_DIR = os.path.join(DEPLOY, "prometheus")
PROMETHEUS_YML = os.path.join(PROMETHEUS_DIR, "prometheus.yml")
RULE_TESTS = sorted(glob.glob(os.path.join(PROMETHEUS_DIR, "tests", "*.yml")))
ALERTMANAGER_YML = os.path.join(DEPLOY, "alertmanager", "alertmanager.yml")
PROMTOOL = "/usr/bin/promtool"
AMTOOL = "/usr/bin/amtool"


def run(*argv):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout + result.stderr


def alert_rules():
    return [rule for _, _, rule in dashlib.load_rules() if "alert" in rule]


class Promtool(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.path.exists(PROMTOOL), "promtool is missing: deploy/install-deps.sh "
                                                  "installs Debian's prometheus package")

    def test_check_config(self):
        code, out = run(PROMTOOL, "check", "config", PROMETHEUS_YML)
        self.assertEqual(code, 0, out)
        self.assertIn("SUCCESS", out)
        # rule_files is checked too: it must have found the rules.
        self.assertRegex(out, r"SUCCESS: [1-9]\d* rules found")

    def test_check_rules(self):
        files = sorted(glob.glob(dashlib.RULES_GLOB))
        self.assertTrue(files)
        code, out = run(PROMTOOL, "check", "rules", "--lint=all", "--lint-fatal", *files)
        self.assertEqual(code, 0, out)

    def test_rule_unit_tests_pass(self):
        self.assertTrue(RULE_TESTS)
        code, out = run(PROMTOOL, "test", "rules", *RULE_TESTS)
        self.assertEqual(code, 0, out)


class RuleCoverage(unittest.TestCase):
    """Every alert is tested firing and not firing, and says what to do."""

    @classmethod
    def setUpClass(cls):
        cls.alerts = alert_rules()
        cls.cases = []  # (alertname, exp_alerts)
        for path in RULE_TESTS:
            with open(path) as f:
                doc = yaml.safe_load(f)
            for test in doc.get("tests", []):
                for case in test.get("alert_rule_test", []) or []:
                    cls.cases.append((case["alertname"], case.get("exp_alerts") or []))

    def test_the_alerts_the_service_needs(self):
        names = {a["alert"] for a in self.alerts}
        for needed in ("DevtimeRegressionOpen", "DevtimeJobFailing", "DevtimeNightlyRunMissed",
                       "DevtimeAgentDown", "DevtimeAgentSpoolFilling",
                       "DevtimeCollectorIngestErrors", "DevtimeDatabaseDown"):
            self.assertIn(needed, names)

    def test_every_alert_fires_and_stays_silent_in_the_tests(self):
        for alert in self.alerts:
            name = alert["alert"]
            with self.subTest(alert=name):
                mine = [exp for n, exp in self.cases if n == name]
                self.assertTrue(any(mine), f"{name}: no test where it fires")
                self.assertTrue(any(not exp for exp in mine), f"{name}: no test where it "
                                                              "does not fire")

    def test_every_alert_has_summary_runbook_and_severity(self):
        for alert in self.alerts:
            name = alert["alert"]
            with self.subTest(alert=name):
                annotations = alert.get("annotations", {})
                self.assertTrue(annotations.get("summary", "").strip())
                self.assertTrue(annotations.get("runbook", "").strip())
                self.assertNotIn("\n", annotations["runbook"], "runbook: one line")
                severity = alert.get("labels", {}).get("severity")
                if severity is None:  # then it comes from the series (a regression's own)
                    firing = [e for n, exp in self.cases if n == name for e in exp]
                    self.assertTrue(firing and all("severity" in e.get("exp_labels", {})
                                                   for e in firing), f"{name}: no severity")
                else:
                    self.assertIn(severity, ("critical", "warning", "info"))
        for name, expected in self.cases:
            for alert in expected:
                with self.subTest(alert=name):
                    self.assertIn(alert.get("exp_labels", {}).get("severity"),
                                  ("critical", "warning", "info"))
                    self.assertIn("runbook", alert.get("exp_annotations", {}))

    def test_critical_regressions_page(self):
        regression = next(a for a in self.alerts if a["alert"] == "DevtimeRegressionOpen")
        firing = [e for n, exp in self.cases if n == "DevtimeRegressionOpen" for e in exp]
        self.assertIn("critical", {e["exp_labels"]["severity"] for e in firing})
        self.assertNotIn("severity", regression.get("labels", {}),
                         "the severity is the regression's own (from the series)")

    def test_rule_expressions_use_known_metrics(self):
        for file, group, rule in dashlib.load_rules():
            with self.subTest(rule=rule.get("alert") or rule.get("record")):
                problems = [p for p in lint_dashboards.promql_problems(rule["expr"])
                            if "rate_interval" not in p]
                self.assertEqual(problems, [])

    def test_dashboard_links_name_existing_dashboards_and_variables(self):
        boards = {b["uid"]: b for b in dashlib.load_dashboards().values()}
        for alert in self.alerts:
            url = alert.get("annotations", {}).get("dashboard")
            if not url:
                continue
            with self.subTest(alert=alert["alert"]):
                uid = re.search(r"/d/([^/?]+)", url).group(1)
                self.assertIn(uid, boards)
                defined = {v["name"] for v in boards[uid]["templating"]["list"]}
                for var in re.findall(r"var-(\w+)=", url):
                    self.assertIn(var, defined)


class PrometheusConfig(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(PROMETHEUS_YML) as f:
            cls.config = yaml.safe_load(f)

    def test_scrape_jobs_are_named_for_the_rules_and_dashboards(self):
        jobs = {j["job_name"]: j for j in self.config["scrape_configs"]}
        self.assertEqual(set(jobs), {"devtime-collector", "devtime-agent"})
        for job in jobs.values():
            # devtime's own `job` label (a devtime job's name) must not become exported_job.
            self.assertTrue(job.get("honor_labels"), job["job_name"])

    def test_rules_and_alertmanager_are_wired(self):
        matched = set()
        for pattern in self.config["rule_files"]:
            matched |= set(glob.glob(os.path.join(PROMETHEUS_DIR, pattern)))
        self.assertEqual(matched, set(glob.glob(dashlib.RULES_GLOB)))
        targets = [t for am in self.config["alerting"]["alertmanagers"]
                   for sc in am.get("static_configs", []) for t in sc["targets"]]
        self.assertTrue(targets)

    def test_file_sd_target_files_exist(self):
        for job in self.config["scrape_configs"]:
            for sd in job.get("file_sd_configs", []):
                for pattern in sd["files"]:
                    self.assertTrue(glob.glob(os.path.join(PROMETHEUS_DIR, pattern)), pattern)


class Alertmanager(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.path.exists(AMTOOL), "amtool is missing: deploy/install-deps.sh "
                                                "installs Debian's prometheus-alertmanager")

    def test_check_config(self):
        code, out = run(AMTOOL, "check-config", ALERTMANAGER_YML)
        self.assertEqual(code, 0, out)

    def routes(self, *labels):
        result = subprocess.run([AMTOOL, "config", "routes", "test",
                                 f"--config.file={ALERTMANAGER_YML}", *labels],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        return result.stdout.strip().splitlines()[-1].split(",")

    def test_critical_pages_and_everything_reaches_the_team(self):
        self.assertEqual(self.routes("alertname=DevtimeRegressionOpen", "severity=critical"),
                         ["devtime-pager", "devtime-team"])
        self.assertEqual(self.routes("alertname=DevtimeDatabaseDown", "severity=critical"),
                         ["devtime-pager", "devtime-team"])
        self.assertEqual(self.routes("alertname=DevtimeRegressionOpen", "severity=warning"),
                         ["devtime-team"])
        self.assertEqual(self.routes("alertname=DevtimeJobFailing", "severity=warning"),
                         ["devtime-team"])
        self.assertEqual(self.routes("alertname=DevtimeRegressionOpen", "severity=info"),
                         ["devtime-team"])

    def test_receivers_are_webhooks(self):
        with open(ALERTMANAGER_YML) as f:
            config = yaml.safe_load(f)
        for receiver in config["receivers"]:
            self.assertTrue(receiver.get("webhook_configs"), receiver["name"])


if __name__ == "__main__":
    unittest.main()
