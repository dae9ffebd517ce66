#!/usr/bin/env python3
"""The dashboards pass the lint (lint_dashboards.py), and the lint fails on broken ones.

usage: test_lint.py [-v]     (PromQL is parsed with /usr/bin/promtool, from Debian's prometheus)
"""
import copy
import datetime
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402
import lint_dashboards  # noqa: E402

PROMTOOL = "/usr/bin/promtool"
PROVISIONED = {"devtime-prometheus": "prometheus",
               "devtime-postgres": "grafana-postgresql-datasource"}
PROM = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
PG = {"type": "grafana-postgresql-datasource", "uid": "${DS_POSTGRES}"}


def valid_dashboard():
    """A small dashboard that passes every rule: each test breaks one thing."""
    return {
        "uid": "devtime-sample", "title": "sample", "editable": False, "schemaVersion": 39,
        "version": 1,
        "annotations": {"list": [
            {"builtIn": 1, "name": "Annotations & Alerts", "enable": True,
             "datasource": {"type": "grafana", "uid": "-- Grafana --"}},
            {"name": "Regressions", "enable": True, "datasource": PG,
             "target": {"refId": "Anno", "rawQuery": True, "editorMode": "code",
                        "format": "table",
                        "rawSql": "SELECT first_bad_at AS \"time\", summary AS text FROM "
                                  "regressions WHERE model = ${model:sqlstring} AND "
                                  "$__timeFilter(first_bad_at)"}}]},
        "templating": {"list": [
            {"type": "datasource", "name": "DS_PROMETHEUS", "label": "Prometheus",
             "query": "prometheus", "current": {"value": "devtime-prometheus"}},
            {"type": "datasource", "name": "DS_POSTGRES", "label": "PostgreSQL",
             "query": "grafana-postgresql-datasource", "current": {"value": "devtime-postgres"}},
            {"type": "query", "name": "model", "label": "Model", "datasource": PG,
             "query": "SELECT DISTINCT model FROM runs", "refresh": 2}]},
        "links": [{"title": "fleet", "url": "/d/devtime-fleet/devtime-fleet"}],
        "panels": [
            {"id": 1, "type": "row", "title": "Now", "gridPos": {"x": 0, "y": 0, "w": 24, "h": 1},
             "panels": []},
            {"id": 2, "type": "timeseries", "title": "Step time", "description": "d",
             "gridPos": {"x": 0, "y": 1, "w": 12, "h": 8}, "datasource": PROM,
             "fieldConfig": {"defaults": {"unit": "s"}, "overrides": []},
             "targets": [{"refId": "A", "datasource": PROM,
                          "expr": 'devtime_step_seconds{model="$model"}'},
                         {"refId": "B", "datasource": PROM,
                          "expr": "sum(rate(devtime_ingest_runs_total[$__rate_interval]))"}]},
            {"id": 3, "type": "timeseries", "title": "History", "description": "d",
             "gridPos": {"x": 12, "y": 1, "w": 12, "h": 8}, "datasource": PG,
             "fieldConfig": {"defaults": {"unit": "µs"}, "overrides": [
                 {"matcher": {"id": "byName", "options": "x"},
                  "properties": [{"id": "unit", "value": "percentunit"}]}]},
             "targets": [{"refId": "A", "datasource": PG, "rawQuery": True,
                          "editorMode": "code", "format": "time_series",
                          "rawSql": "SELECT at AS \"time\", value FROM series_points "
                                    "WHERE $__timeFilter(at)"}]}],
    }


# A value for assertProblemsAt that deletes the key instead of setting it.
DELETED = object()


class LinterCatchesBrokenDashboards(unittest.TestCase):
    def lint(self, board):
        return lint_dashboards.lint(board, "sample.json", PROVISIONED,
                                    known_uids={"devtime-sample", "devtime-fleet"})

    def assertProblem(self, board, fragment):
        problems = self.lint(board)
        self.assertTrue(any(fragment in p for p in problems),
                        f"expected a problem containing {fragment!r}, got {problems}")

    def assertProblemsAt(self, place, cases):
        """For each (key, value, fragment) in `cases`, a fresh valid dashboard with
        place(board)[key] set to value (or deleted, for DELETED) has a problem containing
        fragment: each case breaks one thing."""
        for key, value, fragment in cases:
            with self.subTest(key=key, fragment=fragment):
                board = valid_dashboard()
                if value is DELETED:
                    del place(board)[key]
                else:
                    place(board)[key] = value
                self.assertProblem(board, fragment)

    def panel(self, board, pid):
        return next(p for p in board["panels"] if p["id"] == pid)

    def test_the_valid_sample_passes(self):
        self.assertEqual(self.lint(valid_dashboard()), [])

    def test_missing_unit(self):
        self.assertProblemsAt(lambda board: self.panel(board, 2)["fieldConfig"]["defaults"],
                              [("unit", DELETED, "no unit")])

    def test_unknown_unit_and_override_unit(self):
        self.assertProblemsAt(lambda board: self.panel(board, 2)["fieldConfig"]["defaults"],
                              [("unit", "microseconds", "unknown unit 'microseconds'")])
        self.assertProblemsAt(
            lambda board: self.panel(board, 3)["fieldConfig"]["overrides"][0]["properties"][0],
            [("value", "us", "override unit 'us' is unknown")])

    def test_missing_title_and_description(self):
        self.assertProblemsAt(lambda board: self.panel(board, 2), [("title", "", "has no title")])
        self.assertProblemsAt(lambda board: self.panel(board, 3),
                              [("description", DELETED, "has no description")])

    def test_duplicate_panel_ids(self):
        self.assertProblemsAt(lambda board: self.panel(board, 3), [("id", 2, "duplicate panel id")])

    def test_nested_row_panels_are_checked(self):
        board = valid_dashboard()
        nested = copy.deepcopy(self.panel(board, 3))
        nested["gridPos"] = {"x": 0, "y": 20, "w": 24, "h": 4}
        del nested["fieldConfig"]["defaults"]["unit"]
        nested["id"] = 9
        self.panel(board, 1)["panels"].append(nested)
        self.assertProblem(board, "panel 9 'History': no unit")

    def test_grid_outside_24_columns_and_overlap(self):
        self.assertProblemsAt(lambda board: self.panel(board, 3)["gridPos"], [
            ("w", 13, "does not fit the 24 columns"),
            ("x", 6, "overlaps panel 2")])

    def test_schema_version_uid_and_editable(self):
        self.assertProblemsAt(lambda board: board, [
            ("schemaVersion", 38, "must be 39"),
            ("uid", "Sample Dashboard", "malformed uid"),
            ("uid", "devtime-other", "must be 'devtime-sample'"),
            ("editable", True, "editable")])

    def test_undefined_and_unused_variables(self):
        self.assertProblemsAt(lambda board: self.panel(board, 2)["targets"][0], [
            ("expr", 'devtime_step_seconds{model="$modell"}', "uses undefined variable $modell")])
        self.assertProblemsAt(lambda board: self.panel(board, 2), [
            ("title", "Step time of ${workload}", "uses undefined variable $workload")])
        board = valid_dashboard()
        board["templating"]["list"].append(
            {"type": "query", "name": "workload", "label": "Workload", "datasource": PG,
             "query": "SELECT DISTINCT workload FROM runs", "refresh": 2})
        self.assertProblem(board, "variable $workload: is defined but never used")

    def test_unknown_variable_format(self):
        self.assertProblemsAt(lambda board: self.panel(board, 2)["targets"][0], [
            ("expr", 'devtime_step_seconds{model="${model:sql}"}', "unknown variable format :sql")])

    def test_datasources_must_be_provisioned_and_match(self):
        self.assertProblemsAt(lambda board: self.panel(board, 2), [
            ("datasource", {"type": "prometheus", "uid": "prom-prod"},
             "'prom-prod' is not provisioned"),
            ("datasource", {"type": "prometheus", "uid": "${DS_POSTGRES}"},
             "does not match $DS_POSTGRES"),
            ("datasource", {"type": "prometheus", "uid": "${DS_PROM}"},
             "data source variable $DS_PROM is not defined"),
            ("datasource", "Prometheus", "datasource must be an object")])
        self.assertProblemsAt(lambda board: board["templating"]["list"][0]["current"], [
            ("value", "other", "is not a provisioned data source uid")])

    def test_query_variables_refresh_on_time_change(self):
        self.assertProblemsAt(lambda board: board["templating"]["list"][2],
                              [("refresh", 1, "refresh: 2")])

    def test_promql_rules(self):
        self.assertProblemsAt(lambda board: self.panel(board, 2)["targets"][1], [
            ("expr", "sum(rate(devtime_ingest_runs_total[5m]))",
             "rate() must use [$__rate_interval]"),
            ("expr", "sum(devtime_ingest_runs_total)",
             "devtime_ingest_runs_total must be wrapped in rate")])
        self.assertProblemsAt(lambda board: self.panel(board, 2)["targets"][0], [
            ("expr", 'devtime_step_second{model="$model"}', "unknown metric devtime_step_second")])

    def test_sql_rules(self):
        self.assertProblemsAt(lambda board: self.panel(board, 3)["targets"][0], [
            ("rawSql", "SELECT at, value FROM series_points", 'needs a column named "time"'),
            ("rawQuery", False, "rawQuery: true")])
        self.assertProblemsAt(lambda board: board["annotations"]["list"][1]["target"], [
            ("rawSql", DELETED, "SQL annotation without target.rawSql")])

    def test_no_targets(self):
        self.assertProblemsAt(lambda board: self.panel(board, 3),
                              [("targets", [], "has no targets")])

    def test_links_to_unknown_dashboards(self):
        self.assertProblemsAt(lambda board: board["links"][0], [
            ("url", "/d/devtime-flet/x", "unknown dashboard uid 'devtime-flet'")])

    @unittest.skipUnless(os.path.exists(PROMTOOL), "promtool is not installed")
    def test_promtool_reports_unparsable_promql(self):
        problems = lint_dashboards.promtool_problems(
            [("ok", "sum(up)"), ("broken", 'sum(rate(devtime_ingest_runs_total[5m])')], PROMTOOL)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("broken: PromQL does not parse", problems[0])
        self.assertEqual(lint_dashboards.promtool_problems([("ok", "sum(up)")], PROMTOOL), [])


class Substitution(unittest.TestCase):
    def test_sqlstring_quotes_and_escapes(self):
        sql = "WHERE model = ${model:sqlstring} AND op = '$op'"
        self.assertEqual(dashlib.substitute(sql, {"model": "it's", "op": "aten::mul"}, "sql"),
                         "WHERE model = 'it''s' AND op = 'aten::mul'")

    def test_promql_builtins_and_unknown_variables(self):
        self.assertEqual(dashlib.substitute("rate(x[$__rate_interval])", {}, "promql"),
                         "rate(x[5m])")
        with self.assertRaises(KeyError):
            dashlib.substitute("x{a=\"$nope\"}", {}, "promql")

    def test_sql_macros(self):
        start = datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc)
        end = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
        self.assertEqual(
            dashlib.expand_sql_macros("SELECT $__timeGroupAlias(t, '1d') WHERE "
                                      "$__timeFilter(t) AND x < $__timeTo()", start, end),
            "SELECT floor(extract(epoch from t)/86400)*86400 AS \"time\" WHERE t BETWEEN "
            "'2026-11-01T00:00:00Z' AND '2026-12-01T00:00:00Z' AND x < '2026-12-01T00:00:00Z'")
        with self.assertRaises(ValueError):
            dashlib.expand_sql_macros("SELECT $__timeEpoch(t)", start, end)


class TheDashboards(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.boards = dashlib.load_dashboards()

    def test_lint_is_clean(self):
        promtool = PROMTOOL if os.path.exists(PROMTOOL) else None
        self.assertIsNotNone(promtool, "promtool is missing: deploy/install-deps.sh installs "
                                       "Debian's prometheus package")
        problems = lint_dashboards.lint_all(promtool=promtool)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_the_two_dashboards_with_their_uids(self):
        self.assertEqual({n: b["uid"] for n, b in self.boards.items()},
                         {"model.json": "devtime-model", "fleet.json": "devtime-fleet"})

    def test_model_dashboard_variables(self):
        names = [v["name"] for v in self.boards["model.json"]["templating"]["list"]]
        self.assertEqual(names, ["DS_PROMETHEUS", "DS_POSTGRES", "model", "workload",
                                 "instance_type"])

    def test_both_datasources_are_used_by_both_dashboards(self):
        for name, board in self.boards.items():
            kinds = {q.kind for q in dashlib.queries(board)}
            self.assertEqual(kinds, {"sql", "promql"}, name)

    def test_regressions_are_annotations_at_their_first_bad_run(self):
        annotations = [q for q in dashlib.queries(self.boards["model.json"])
                       if q.where.startswith("annotation")]
        self.assertEqual(len(annotations), 1)
        self.assertEqual(annotations[0].kind, "sql")
        self.assertIn("first_bad_at AS \"time\"", annotations[0].text)
        self.assertIn("FROM regressions", annotations[0].text)

    def test_every_query_substitutes_with_the_demo_values(self):
        start = datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc)
        end = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
        for name, board in self.boards.items():
            for q in dashlib.queries(board):
                with self.subTest(dashboard=name, query=q.where):
                    text = dashlib.substitute(q.text, dashlib.DEMO_VALUES, q.kind)
                    if q.kind == "sql":
                        text = dashlib.expand_sql_macros(text, start, end)
                    self.assertNotIn("$", text)


if __name__ == "__main__":
    unittest.main()
