"""What the integration tests of the dashboards share: a fresh database on the
DEVTIME_TEST_DATABASE cluster, a real devtime-collector on it, the demo history uploaded by a
real `devtime-agent upload`, and a real devtime-agent daemon running one scheduled job.

    stack = Stack(collector=BIN, agent=BIN, ctl=BIN, prefix="devtime-dash-sql-")
    try:
        stack.start_collector()  # extra flags: start_collector(["--metrics-refresh-ms", "500"])
        stack.upload_demo()      # deploy/demo/make_history.py, 42 nightly runs
        stack.apply_job()        # one job copying a committed torch profile
        stack.start_agent()      # metrics_port=N: agent.yaml metrics_listen on 127.0.0.1:N
        stack.run_job()          # `devtimectl jobs run-now`, waits until its run is stored
    finally:
        stack.down()             # stops every process, drops the database (and reader role)

Every process logs into stack.tmp/NAME.log (stack.tail(NAME) reads it back);
DEVTIME_KEEP_TEST_DIR=1 keeps that folder.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402

PSQL = shutil.which("psql") or "/usr/bin/psql"
FIXTURE = os.path.join(dashlib.SOURCE_DIR, "tests", "fixtures", "trace", "legacy_mlp")
MAKE_HISTORY = os.path.join(dashlib.SOURCE_DIR, "deploy", "demo", "make_history.py")
READONLY_ROLE_SH = os.path.join(dashlib.SOURCE_DIR, "deploy", "grafana", "readonly-role.sh")
JOB = "dashboards-test"  # the job the agent runs
AGENT = "dashboards-agent"


def with_database(conninfo, name):
    """`conninfo` (key=value form) with dbname replaced, as tests/support/test_database.cc."""
    parts = [p for p in conninfo.split() if not p.startswith("dbname=")]
    return " ".join(parts + [f"dbname={name}"])


def conninfo_fields(conninfo):
    return dict(p.split("=", 1) for p in conninfo.split() if "=" in p)


def with_fields(conninfo, **fields):
    merged = {**conninfo_fields(conninfo), **fields}
    return " ".join(f"{k}={v}" for k, v in merged.items())


def psql(conninfo, sql):
    result = subprocess.run([PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", conninfo,
                             "-c", sql], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"psql failed: {result.stderr.strip()}\n{sql}")
    return result.stdout


def wait_for(condition, seconds, what, interval=0.2):
    """Polls `condition` until it returns something true (returned) or `seconds` pass.
    `what` may be a callable, called only on timeout (e.g. to read a log)."""
    deadline = time.monotonic() + seconds
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {seconds} s waiting for "
                               f"{what() if callable(what) else what}")
        time.sleep(interval)


def free_port():
    """A loopback TCP port free right now (for programs that cannot report the port they bound
    with port 0: the agent's metrics_listen, Prometheus's --web.listen-address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_conninfo():
    cluster = os.environ.get("DEVTIME_TEST_DATABASE", "")
    if not cluster:
        raise RuntimeError("DEVTIME_TEST_DATABASE is not set: run deploy/test.sh, or "
                           "deploy/pg.sh start .devtime/test-pg and export "
                           "DEVTIME_TEST_DATABASE=\"$(deploy/pg.sh conninfo .devtime/test-pg)\"")
    return cluster


class Stack:
    """A fresh database and the devtime processes on it (see the module's docstring)."""

    def __init__(self, collector, agent, ctl, prefix="devtime-dash-", reader_role=False):
        self.binaries = {"collector": collector, "agent": agent, "ctl": ctl}
        cluster = cluster_conninfo()
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.processes = []
        self.collector_process = self.agent_process = None
        self.collector = self.metrics_port = self.agent_metrics_port = None
        self.schema_version = None
        self.reader_role = None
        self.admin = with_database(cluster, "postgres")
        self.name = f"devtime_dash_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        try:
            psql(self.admin, f"CREATE DATABASE {self.name}")
        except BaseException:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        self.conninfo = self.reader = with_database(cluster, self.name)
        if reader_role:
            try:
                self._make_reader_role()
            except BaseException:
                self.down()
                raise

    def _make_reader_role(self):
        # Grafana's SELECT-only role, made by the script the compose file runs in PostgreSQL
        # (a unique name: roles belong to the whole cluster).
        self.reader_role = f"{self.name}_ro"
        fields = conninfo_fields(self.conninfo)
        env = dict(os.environ, POSTGRES_USER=fields.get("user", os.environ.get("USER", "")),
                   POSTGRES_DB=self.name, DEVTIME_GRAFANA_PG_USER=self.reader_role,
                   DEVTIME_GRAFANA_PG_PASSWORD="dashboards-test")
        for key, variable in (("host", "PGHOST"), ("port", "PGPORT"),
                              ("password", "PGPASSWORD"), ("sslmode", "PGSSLMODE")):
            if key in fields:
                env[variable] = fields[key]
        role = subprocess.run(["/bin/sh", READONLY_ROLE_SH], env=env, capture_output=True,
                              text=True, timeout=60)
        if role.returncode != 0:
            raise RuntimeError(f"deploy/grafana/readonly-role.sh failed: {role.stderr}")
        self.reader = with_fields(self.conninfo, user=self.reader_role,
                                  password="dashboards-test")

    # ---- processes and their logs ----------------------------------------------------------

    def path(self, name):
        return os.path.join(self.tmp, name)

    def log(self, name):
        return open(self.path(name + ".log"), "ab")

    def start(self, name, argv):
        with self.log(name) as log:
            process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL)
        self.processes.append(process)
        return process

    def tail(self, name, lines=30):
        try:
            with open(self.path(name + ".log"), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def ctl(self, *args):
        result = subprocess.run([self.binaries["ctl"], "--collector", self.collector, *args],
                                capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise RuntimeError(f"devtimectl {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout

    def check_alive(self):
        """Raises at once when the collector or the agent daemon has died."""
        for name, process in (("collector", self.collector_process),
                              ("agent", self.agent_process)):
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"devtime-{name} exited with {process.returncode}:\n"
                                   + self.tail(name))

    # ---- the steps -------------------------------------------------------------------------

    def start_collector(self, extra_args=()):
        ready = self.path("collector.ready")
        collector = self.collector_process = self.start("collector", [
            self.binaries["collector"], "--database", self.conninfo, "--no-auth",
            "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--ready-file", ready,
            "--session-poll-ms", "200", "--slot-check-ms", "1000", "--missed-slot-grace", "3",
            *extra_args])

        def collector_ready():
            if collector.poll() is not None:
                raise RuntimeError("devtime-collector exited:\n" + self.tail("collector"))
            return os.path.exists(ready) and os.path.getsize(ready) > 0

        wait_for(collector_ready, 60, "the collector")
        with open(ready) as f:
            info = json.load(f)
        self.collector = f"127.0.0.1:{info['grpc_port']}"
        self.metrics_port = info.get("metrics_port")
        self.schema_version = info.get("schema_version")

    def upload(self, files):
        """devtime-agent upload FILES; fails at once if the collector dies meanwhile."""
        with self.log("upload") as log:
            upload = subprocess.Popen([self.binaries["agent"], "upload", "--collector",
                                       self.collector, "--retry-for", "30", *files], stdout=log,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.processes.append(upload)
        deadline = time.monotonic() + 300
        while upload.poll() is None:
            if self.collector_process.poll() is not None:
                upload.kill()
                raise RuntimeError("devtime-collector died during the demo upload (exit "
                                   f"{self.collector_process.returncode}):\n"
                                   + self.tail("collector") + self.tail("upload", 5))
            if time.monotonic() > deadline:
                raise RuntimeError("the demo upload took over 300 s:\n" + self.tail("upload"))
            time.sleep(0.1)
        if upload.returncode != 0:
            raise RuntimeError("devtime-agent upload failed:\n" + self.tail("upload") +
                               self.tail("collector"))

    def upload_demo(self):
        """The RMSNorm demo history (deploy/demo/make_history.py), uploaded by the agent."""
        demo = self.path("demo")
        subprocess.run([sys.executable, MAKE_HISTORY, "--out", demo], check=True,
                       capture_output=True, timeout=120)
        self.upload(sorted(os.path.join(demo, f) for f in os.listdir(demo)
                           if f.endswith(".json")))

    def apply_job(self, job=JOB):
        """One scheduled job for the agent: it copies a committed torch profile."""
        jobs = self.path("jobs.yaml")
        with open(jobs, "w") as f:
            f.write("jobs:\n"
                    f"  - name: {job}\n"
                    "    model: mlp\n"
                    "    workload: legacy\n"
                    f"    command: \"cp '{FIXTURE}'/* {{output_dir}}/\"\n"
                    "    schedule: {cron: \"0 2 * * *\", time_zone: UTC}\n"
                    "    selector: {labels: {pool: dashboards}}\n"
                    "    timeout_seconds: 60\n"
                    "    capture_steps: 2\n")
        self.ctl("jobs", "apply", "-f", jobs)

    def start_agent(self, metrics_port=None):
        """The agent daemon (agent.yaml metrics_listen on 127.0.0.1:metrics_port if given);
        returns once the collector lists it."""
        config = self.path("agent.yaml")
        home = self.path("agent")
        with open(config, "w") as f:
            f.write(f"name: {AGENT}\nhost: dashboards-host\ninstance_type: cpu-test\n"
                    f"labels: {{pool: dashboards}}\ncollector: {self.collector}\n"
                    f"work_dir: {home}/runs\nspool_dir: {home}/spool\nstate_dir: {home}/state\n")
            if metrics_port:
                f.write(f"metrics_listen: 127.0.0.1:{metrics_port}\n")
        self.agent_metrics_port = metrics_port
        self.agent_process = self.start("agent", [self.binaries["agent"], "run",
                                                  "--config", config])

        def listed():
            self.check_alive()
            return AGENT in self.ctl("agents", "list")

        wait_for(listed, 60, lambda: "the agent (agent log:\n" + self.tail("agent") + ")")

    def stored_runs(self, job=JOB):
        return int(psql(self.conninfo,
                        f"SELECT count(*) FROM runs WHERE job = '{job}'").strip() or 0)

    def run_job(self, job=JOB, seconds=60):
        """`devtimectl jobs run-now JOB`; returns once its slot succeeded (jobs history) and the
        run it made is stored."""
        before = self.stored_runs(job)
        succeeded = self.ctl("jobs", "history", job).count("succeeded")
        self.ctl("jobs", "run-now", job)

        def stored():
            self.check_alive()
            return (self.ctl("jobs", "history", job).count("succeeded") > succeeded
                    and self.stored_runs(job) > before)

        wait_for(stored, seconds, lambda: f"a run of job {job} to be stored (jobs history:\n"
                 + self.ctl("jobs", "history", job) + "agent log:\n" + self.tail("agent") + ")")

    def stop_agent(self):
        if self.agent_process and self.agent_process.poll() is None:
            self.agent_process.send_signal(signal.SIGTERM)
            self.agent_process.wait(timeout=30)

    def down(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        statements = [f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)"]
        if self.reader_role:
            statements.append(f"DROP ROLE IF EXISTS {self.reader_role}")
        for statement in statements:
            try:
                psql(self.admin, statement)
            except RuntimeError as e:
                print(f"cleanup failed: {e}", file=sys.stderr)
        if os.environ.get("DEVTIME_KEEP_TEST_DIR"):
            print(f"logs kept in {self.tmp}", file=sys.stderr)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
