#!/usr/bin/env python3
"""Every SQL query of the dashboards (panels, annotations, template variables) runs against a
real PostgreSQL holding real data, and returns rows.

The data is made the way production makes it: a devtime-collector migrates a fresh database
(CREATE DATABASE with a unique name on the DEVTIME_TEST_DATABASE cluster, dropped at the end),
`devtime-agent upload` sends the RMSNorm demo history (deploy/demo/make_history.py, 42 nightly
runs with the 2026-11-25 fusion regression), and a devtime-agent daemon runs one scheduled job
(`devtimectl jobs run-now`, the job copies a committed torch profile) so that jobs, agents and
job_slots have rows. The queries run as the SELECT-only role Grafana uses
(deploy/grafana/readonly-role.sh, run here as the compose file runs it). Template variables take the demo values (dashlib.DEMO_VALUES), the
PostgreSQL macros a range that covers the demo nights and today.

Regression detection runs in the collector after ingest, so a query that returns no rows yet
is retried until --settle seconds have passed.

usage: test_dashboard_sql.py --collector BIN --agent BIN --ctl BIN [--settle 90] [-v]
       test_dashboard_sql.py --existing-database CONNINFO   (queries only, e.g. the quickstart's)
needs: DEVTIME_TEST_DATABASE (a libpq connection string; deploy/test.sh sets it), /usr/bin/psql
"""
import argparse
import csv
import datetime
import io
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402
import stacklib  # noqa: E402
from stacklib import psql  # noqa: E402

ARGS = None
SQL_TEST_JOB = "dashboards-sql-test"


def run_query(conninfo, sql):
    """(columns, rows) of one SELECT, read through COPY ... TO STDOUT (CSV)."""
    body = sql.strip().rstrip(";")
    out = psql(conninfo, f"COPY ({body}) TO STDOUT WITH (FORMAT csv, HEADER)")
    rows = list(csv.reader(io.StringIO(out)))
    return rows[0], rows[1:]


def time_range():
    """A range that covers the demo nights (2026-11-15..28) and the job run made now."""
    now = datetime.datetime.now(datetime.timezone.utc)
    start = min(now - datetime.timedelta(days=1),
                datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc))
    end = max(now + datetime.timedelta(hours=1),
              datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc))
    return start, end


def prepare(query, values=None):
    start, end = time_range()
    text = dashlib.substitute(query.text, values or dashlib.DEMO_VALUES, "sql")
    return dashlib.expand_sql_macros(text, start, end)


class ExistingDatabase:
    """--existing-database: the queries only, against a database that already holds data."""

    def __init__(self, conninfo):
        self.conninfo = self.reader = conninfo
        self.name = None
        self.schema_version = "?"

    def down(self):
        pass


def make_stack(args):
    """A fresh database, a collector on it, the demo history, the read-only role and one job
    run by a real agent daemon (stopped afterwards): stacklib.Stack."""
    if args.existing_database:
        return ExistingDatabase(args.existing_database)
    stack = stacklib.Stack(args.collector, args.agent, args.ctl, prefix="devtime-dash-sql-",
                           reader_role=True)
    try:
        stack.start_collector()
        stack.upload_demo()
        # One scheduled job, run by a real agent daemon, so that the fleet tables have rows.
        stack.apply_job(SQL_TEST_JOB)
        stack.start_agent()
        stack.run_job(SQL_TEST_JOB)
        stack.stop_agent()
    except BaseException:
        stack.down()
        raise
    return stack


class DashboardSqlTest(unittest.TestCase):
    stack = None

    @classmethod
    def setUpClass(cls):
        cls.stack = make_stack(ARGS)
        cls.boards = dashlib.load_dashboards()
        cls.sql = [(name, q) for name, board in cls.boards.items()
                   for q in dashlib.queries(board, name) if q.kind == "sql"]

    @classmethod
    def tearDownClass(cls):
        if cls.stack:
            cls.stack.down()

    def test_dashboards_have_sql_queries(self):
        self.assertGreater(len(self.sql), 5)

    def test_every_sql_query_runs_and_returns_rows(self):
        # Detection and the other background work are asynchronous: queries without rows are
        # retried until the deadline; a query that fails outright fails at once.
        pending = {f"{name}: {q.where}": q for name, q in self.sql}
        results = {}
        deadline = time.monotonic() + ARGS.settle
        while pending:
            for where, q in list(pending.items()):
                try:
                    columns, rows = run_query(self.stack.reader, prepare(q))
                    error = None
                except RuntimeError as e:
                    error = str(e)
                if error:
                    self.fail(f"{where}: the query fails:\n{error}")
                if rows:
                    results[where] = (columns, rows)
                    del pending[where]
            if not pending or time.monotonic() > deadline:
                break
            time.sleep(1)
        for where in pending:
            print(f"NO ROWS: {where}", file=sys.stderr)
        self.assertFalse(pending, f"queries that returned no rows within {ARGS.settle} s "
                                  f"(schema version {self.stack.schema_version}): "
                                  f"{sorted(pending)}")
        for where, (columns, rows) in sorted(results.items()):
            if ARGS.verbose:
                print(f"{where}: {len(rows)} rows, columns {columns}", file=sys.stderr)
            self.assertEqual(len(columns), len(set(columns)), f"{where}: duplicate column names")

    def test_queries_run_as_grafanas_read_only_role(self):
        # run_query above connects as the role deploy/grafana/readonly-role.sh made; it
        # reads every table the collector created after it, and writes none.
        if self.stack.name is None:
            self.skipTest("--existing-database")
        self.assertNotEqual(self.stack.reader, self.stack.conninfo)
        with self.assertRaisesRegex(RuntimeError, "permission denied"):
            psql(self.stack.reader, "DELETE FROM runs WHERE false")

    def test_time_series_queries_return_a_time_column(self):
        for name, board in self.boards.items():
            for panel in dashlib.iter_panels(board):
                for target in panel.get("targets", []) or []:
                    if target.get("format") != "time_series" or "rawSql" not in target:
                        continue
                    q = dashlib.Query("sql", target["rawSql"], f"panel {panel['id']}")
                    columns, _ = run_query(self.stack.reader, prepare(q))
                    with self.subTest(dashboard=name, panel=panel["title"]):
                        self.assertIn("time", columns)

    def test_variables_offer_the_demo_values(self):
        # Grafana evaluates the chained variables in order: each must offer the demo value.
        for name, board in self.boards.items():
            for q in dashlib.queries(board, name):
                m = re.match(r"variable \$(\w+)", q.where)
                if q.kind != "sql" or not m:
                    continue
                with self.subTest(dashboard=name, variable=m.group(1)):
                    _, rows = run_query(self.stack.reader, prepare(q))
                    self.assertIn(dashlib.DEMO_VALUES[m.group(1)], [r[0] for r in rows])

    def test_regression_annotation_marks_the_lost_fusion(self):
        # The demo's fused workload regresses on 2026-11-25; the annotation shows it there.
        board = self.boards["model.json"]
        q = next(q for q in dashlib.queries(board) if q.where.startswith("annotation"))
        deadline = time.monotonic() + ARGS.settle
        rows = []
        while time.monotonic() < deadline:
            columns, rows = run_query(self.stack.reader, prepare(q))
            if rows:
                break
            time.sleep(1)
        self.assertTrue(rows, "no regression annotation for rmsnorm/fused (has the collector's "
                              "detection stored a regression for the demo history?)")
        times = [r[columns.index("time")] for r in rows]
        self.assertTrue(any(t.startswith("2026-11-25") for t in times), times)


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collector", help="devtime-collector executable")
    parser.add_argument("--agent", help="devtime-agent executable")
    parser.add_argument("--ctl", help="devtimectl executable")
    parser.add_argument("--existing-database", metavar="CONNINFO",
                        help="run the queries against this database as it is (no collector, "
                             "no demo upload; e.g. the quickstart's)")
    parser.add_argument("--settle", type=float, default=90,
                        help="seconds to wait for queries to return rows")
    parser.add_argument("--verbose", "-v", action="store_true")
    ARGS, rest = parser.parse_known_args()
    if not ARGS.existing_database and not (ARGS.collector and ARGS.agent and ARGS.ctl):
        parser.error("--collector, --agent and --ctl are required (or --existing-database)")
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2 if ARGS.verbose else 1)


if __name__ == "__main__":
    main()
