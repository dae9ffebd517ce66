#include "services/collector/store/migrations.h"

namespace devtime::store {
namespace {

// Arbitrary constant shared by every collector: pg_advisory_xact_lock key for migrations.
constexpr long long kMigrationLockKey = 0x64657674696d65;  // "devtime"

const char* kInitialSchema = R"sql(
-- One row per run; the uploaded RunSummary is kept verbatim in `summary` (deterministic
-- protobuf) so GetRun returns exactly what was acknowledged.
CREATE TABLE runs (
  run_id             uuid PRIMARY KEY,
  job                text NOT NULL DEFAULT '',
  model              text NOT NULL,
  workload           text NOT NULL,
  host               text NOT NULL,
  instance_type      text NOT NULL DEFAULT '',
  device_kind        text NOT NULL,
  status             text NOT NULL CHECK (status IN ('ok', 'invalid', 'failed')),
  status_reason      text NOT NULL DEFAULT '',
  started_at         timestamptz NOT NULL,
  finished_at        timestamptz,
  received_at        timestamptz NOT NULL DEFAULT now(),
  environment        jsonb NOT NULL DEFAULT '{}',
  capture            jsonb NOT NULL DEFAULT '{}',
  layers             jsonb NOT NULL DEFAULT '{}',
  artifacts          jsonb NOT NULL DEFAULT '[]',
  op_count           integer NOT NULL,
  step_count         integer NOT NULL,
  device_us_per_step double precision NOT NULL,
  total_device_us    double precision NOT NULL,
  summary            bytea NOT NULL,
  content_sha256     bytea NOT NULL
);
CREATE INDEX runs_by_model ON runs (model, workload, started_at DESC);
CREATE INDEX runs_by_start ON runs (started_at DESC);

CREATE TABLE op_stats (
  run_id              uuid NOT NULL REFERENCES runs ON DELETE CASCADE,
  op                  text NOT NULL,
  calls               bigint NOT NULL,
  self_cpu_us         double precision NOT NULL,
  total_cpu_us        double precision NOT NULL,
  self_device_us      double precision NOT NULL,
  total_device_us     double precision NOT NULL,
  step_self_device_us double precision[] NOT NULL,
  PRIMARY KEY (run_id, op)
);

CREATE TABLE run_steps (
  run_id    uuid NOT NULL REFERENCES runs ON DELETE CASCADE,
  step      integer NOT NULL,
  device_us double precision NOT NULL,
  cpu_us    double precision NOT NULL,
  PRIMARY KEY (run_id, step)
);

-- A series is what the detector watches: one metric of one (model, workload, instance
-- type); op = '' is the whole run, otherwise one operator's self time. metric is
-- 'device_us_per_step' (device profiles) or 'cpu_us_per_step' (CPU-only profiles).
CREATE TABLE series (
  series_id     bigserial PRIMARY KEY,
  model         text NOT NULL,
  workload      text NOT NULL,
  instance_type text NOT NULL,
  metric        text NOT NULL,
  op            text NOT NULL,
  UNIQUE (model, workload, instance_type, metric, op)
);

-- One point per OK run: the per-step mean and the within-run noise (stddev over steps).
CREATE TABLE series_points (
  series_id bigint NOT NULL REFERENCES series,
  run_id    uuid NOT NULL REFERENCES runs ON DELETE CASCADE,
  at        timestamptz NOT NULL,
  value     double precision NOT NULL,
  noise     double precision,
  PRIMARY KEY (series_id, run_id)
);
CREATE INDEX series_points_by_time ON series_points (series_id, at);
)sql";

// Scheduled jobs, the agents that run them, and what became of every slot.
const char* kJobsSchema = R"sql(
CREATE TABLE jobs (
  name       text PRIMARY KEY,
  spec       bytea NOT NULL,          -- the JobSpec (deterministic protobuf)
  spec_json  jsonb NOT NULL,          -- the same, readable by SQL and dashboards
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE agents (
  name          text PRIMARY KEY,
  host          text NOT NULL,
  instance_type text NOT NULL DEFAULT '',
  labels        jsonb NOT NULL DEFAULT '{}',
  version       text NOT NULL DEFAULT '',
  identity      bytea NOT NULL,       -- the AgentIdentity as last announced
  first_seen    timestamptz NOT NULL DEFAULT now(),
  last_seen     timestamptz NOT NULL DEFAULT now()
);

-- One row per (job, scheduled time, host): reported by agents, or recorded as missed by the
-- collector when nobody reported it. Job deletion keeps the history.
CREATE TABLE job_slots (
  job         text NOT NULL,
  slot_time   timestamptz NOT NULL,
  host        text NOT NULL,
  outcome     text NOT NULL,
  reason      text NOT NULL DEFAULT '',
  run_id      uuid,
  run_now     boolean NOT NULL DEFAULT false,
  started_at  timestamptz,
  finished_at timestamptz,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job, slot_time, host)
);
CREATE INDEX job_slots_by_time ON job_slots (job, slot_time DESC);

CREATE TABLE run_requests (
  request_id   bigserial PRIMARY KEY,
  job          text NOT NULL,
  host         text NOT NULL DEFAULT '',  -- '' = any matching agent
  requested_at timestamptz NOT NULL DEFAULT now(),
  delivered_to text,
  delivered_at timestamptz
);
CREATE INDEX run_requests_pending ON run_requests (requested_at) WHERE delivered_at IS NULL;
)sql";

// Agent tokens, stored only as their SHA-256.
const char* kAgentTokensSchema = R"sql(
CREATE TABLE agent_tokens (
  name         text PRIMARY KEY,
  host         text NOT NULL,
  token_sha256 text NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL DEFAULT now()
);
)sql";

// Regressions (alerts), every transition of their lifecycle, and the webhook outbox.
const char* kRegressionsSchema = R"sql(
CREATE TABLE regressions (
  regression_id       bigserial PRIMARY KEY,
  state               text NOT NULL
                      CHECK (state IN ('suspected', 'open', 'acknowledged', 'resolved', 'invalid')),
  resolution          text NOT NULL DEFAULT ''
                      CHECK (resolution IN ('', 'fixed', 'accepted_baseline')),
  severity            text NOT NULL CHECK (severity IN ('critical', 'warning', 'info')),
  model               text NOT NULL,
  workload            text NOT NULL,
  instance_type       text NOT NULL,
  job                 text NOT NULL DEFAULT '',
  host                text NOT NULL,
  metric              text NOT NULL,
  last_good_run_id    uuid NOT NULL REFERENCES runs,
  -- One alert per bad run: every series the run moved is a child of it (grouping).
  first_bad_run_id    uuid NOT NULL UNIQUE REFERENCES runs,
  first_bad_at        timestamptz NOT NULL,
  confirmation_run_id uuid REFERENCES runs,
  confirmation_request_id bigint,            -- run_requests.request_id, when one was asked for
  before_us           double precision NOT NULL,  -- baseline median, per step
  baseline_sigma_us   double precision NOT NULL,  -- robust across-run sigma of the baseline
  baseline_count      integer NOT NULL,
  after_us            double precision NOT NULL,
  relative_change     double precision NOT NULL,
  z                   double precision NOT NULL,
  confidence          double precision NOT NULL,
  series              jsonb NOT NULL DEFAULT '[]',  -- RegressionSeries[], whole run first
  attribution         jsonb NOT NULL DEFAULT '{}',  -- Attribution
  summary             text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  fired_at            timestamptz,  -- when it became open (Alertmanager startsAt)
  ended_at            timestamptz   -- when it left open/acknowledged (Alertmanager endsAt)
);
CREATE INDEX regressions_live ON regressions (model, workload, instance_type, metric)
  WHERE state IN ('suspected', 'open', 'acknowledged');
CREATE INDEX regressions_by_time ON regressions (first_bad_at DESC);

CREATE TABLE regression_transitions (
  transition_id bigserial PRIMARY KEY,
  regression_id bigint NOT NULL REFERENCES regressions ON DELETE CASCADE,
  from_state    text NOT NULL DEFAULT '',  -- '' for the creation
  to_state      text NOT NULL,
  actor         text NOT NULL,
  reason        text NOT NULL DEFAULT '',
  at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX regression_transitions_by_regression ON regression_transitions (regression_id, at);

-- Outbox of notification events (written in the transition's transaction, so none is lost):
-- 'opened', 'resolved', 'invalidated'. The webhook channel delivers them in order.
CREATE TABLE regression_events (
  event_id      bigserial PRIMARY KEY,
  regression_id bigint NOT NULL REFERENCES regressions ON DELETE CASCADE,
  kind          text NOT NULL CHECK (kind IN ('opened', 'resolved', 'invalidated')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  delivered_at  timestamptz,
  attempts      integer NOT NULL DEFAULT 0,
  last_error    text NOT NULL DEFAULT ''
);
CREATE INDEX regression_events_pending ON regression_events (event_id) WHERE delivered_at IS NULL;

-- When the detector looked at the run. Analysis follows the ingest commit; a collector that
-- dies in between leaves the run NULL here and the next housekeeping pass analyses it.
ALTER TABLE runs ADD COLUMN analyzed_at timestamptz;
UPDATE runs SET analyzed_at = received_at;
CREATE INDEX runs_not_analyzed ON runs (received_at) WHERE analyzed_at IS NULL;
)sql";

// The ingest fast path (issue 10): what every stored run paid for and nobody needed.
//  - The foreign keys from op_stats, run_steps and series_points to runs (and from
//    series_points to series) checked every one of a run's ~1,000 rows against a row the
//    same transaction had just written: IngestRun is the only writer of these tables and
//    writes the run first; rows leave only with their run (retention drops them together).
//  - series_points by run_id: the dashboards' and retention's per-run reads were sequential
//    scans of all history.
//  - The analysis queue in its claim order (started_at, run_id); the old partial index was
//    ordered by received_at, which the queue never reads in.
const char* kIngestFastPath = R"sql(
ALTER TABLE op_stats DROP CONSTRAINT IF EXISTS op_stats_run_id_fkey;
ALTER TABLE run_steps DROP CONSTRAINT IF EXISTS run_steps_run_id_fkey;
ALTER TABLE series_points DROP CONSTRAINT IF EXISTS series_points_run_id_fkey;
ALTER TABLE series_points DROP CONSTRAINT IF EXISTS series_points_series_id_fkey;
CREATE INDEX series_points_by_run ON series_points (run_id);
DROP INDEX IF EXISTS runs_not_analyzed;
CREATE INDEX runs_analysis_queue ON runs (started_at, run_id) WHERE analyzed_at IS NULL;
)sql";

// History partitioned by month (issue 10 item 4): op_stats, run_steps and series_points are
// range-partitioned on `at` (the run's started_at, now carried by every row so that a run's
// rows live in one month), so that retention drops whole months and time-bounded reads prune.
// runs stays one table: its primary key on run_id alone is what makes ingest idempotent, and
// a partitioned table's keys must include the partition column.
//
// devtime_ensure_month(parent, month) creates a month's partition (idempotent, serialised by
// an advisory lock): a standalone table first, the month's rows moved in from the DEFAULT
// partition (which catches runs dated outside the months created so far), then attached.
// The existing rows are copied into the new tables, each to its run's month.
const char* kPartitionedHistory = R"sql(
CREATE FUNCTION devtime_ensure_month(parent text, month date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  lo timestamptz := date_trunc('month', month::timestamp) AT TIME ZONE 'UTC';
  hi timestamptz := (date_trunc('month', month::timestamp) + interval '1 month') AT TIME ZONE 'UTC';
  part text := parent || '_' || to_char(month, 'YYYY"m"MM');
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('devtime-partitions'));
  IF to_regclass(part) IS NOT NULL THEN RETURN false; END IF;
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part, parent);
  EXECUTE format('WITH moved AS (DELETE FROM %I WHERE at >= $1 AND at < $2 RETURNING *)'
                 ' INSERT INTO %I SELECT * FROM moved', parent || '_default', part) USING lo, hi;
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                 parent, part, lo, hi);
  RETURN true;
END $$;

ALTER TABLE op_stats RENAME TO op_stats_v5;
ALTER INDEX op_stats_pkey RENAME TO op_stats_v5_pkey;
ALTER TABLE run_steps RENAME TO run_steps_v5;
ALTER INDEX run_steps_pkey RENAME TO run_steps_v5_pkey;
ALTER TABLE series_points RENAME TO series_points_v5;
ALTER INDEX series_points_pkey RENAME TO series_points_v5_pkey;
ALTER INDEX series_points_by_time RENAME TO series_points_v5_by_time;
ALTER INDEX series_points_by_run RENAME TO series_points_v5_by_run;

CREATE TABLE op_stats (
  run_id              uuid NOT NULL,
  at                  timestamptz NOT NULL,  -- the run's started_at
  op                  text NOT NULL,
  calls               bigint NOT NULL,
  self_cpu_us         double precision NOT NULL,
  total_cpu_us        double precision NOT NULL,
  self_device_us      double precision NOT NULL,
  total_device_us     double precision NOT NULL,
  step_self_device_us double precision[] NOT NULL,
  PRIMARY KEY (run_id, op, at)
) PARTITION BY RANGE (at);
CREATE TABLE op_stats_default PARTITION OF op_stats DEFAULT;

CREATE TABLE run_steps (
  run_id    uuid NOT NULL,
  at        timestamptz NOT NULL,  -- the run's started_at
  step      integer NOT NULL,
  device_us double precision NOT NULL,
  cpu_us    double precision NOT NULL,
  PRIMARY KEY (run_id, step, at)
) PARTITION BY RANGE (at);
CREATE TABLE run_steps_default PARTITION OF run_steps DEFAULT;

CREATE TABLE series_points (
  series_id bigint NOT NULL,
  run_id    uuid NOT NULL,
  at        timestamptz NOT NULL,
  value     double precision NOT NULL,
  noise     double precision,
  PRIMARY KEY (series_id, run_id, at)
) PARTITION BY RANGE (at);
CREATE TABLE series_points_default PARTITION OF series_points DEFAULT;
CREATE INDEX series_points_by_time ON series_points (series_id, at);
CREATE INDEX series_points_by_run ON series_points (run_id);

DO $$
DECLARE m date;
BEGIN
  FOR m IN SELECT date_trunc('month', started_at AT TIME ZONE 'UTC')::date FROM runs
           UNION SELECT date_trunc('month', now() AT TIME ZONE 'UTC')::date LOOP
    PERFORM devtime_ensure_month('op_stats', m);
    PERFORM devtime_ensure_month('run_steps', m);
    PERFORM devtime_ensure_month('series_points', m);
  END LOOP;
END $$;

-- Every row keeps its run's time; a row without its run (none should exist) keeps the epoch
-- and lands in the DEFAULT partition rather than being lost.
INSERT INTO op_stats (run_id, at, op, calls, self_cpu_us, total_cpu_us, self_device_us,
                      total_device_us, step_self_device_us)
  SELECT o.run_id, coalesce(r.started_at, 'epoch'), o.op, o.calls, o.self_cpu_us, o.total_cpu_us,
         o.self_device_us, o.total_device_us, o.step_self_device_us
  FROM op_stats_v5 o LEFT JOIN runs r USING (run_id);
INSERT INTO run_steps (run_id, at, step, device_us, cpu_us)
  SELECT s.run_id, coalesce(r.started_at, 'epoch'), s.step, s.device_us, s.cpu_us
  FROM run_steps_v5 s LEFT JOIN runs r USING (run_id);
INSERT INTO series_points (series_id, run_id, at, value, noise)
  SELECT series_id, run_id, at, value, noise FROM series_points_v5;
DROP TABLE op_stats_v5, run_steps_v5, series_points_v5;
ANALYZE op_stats;
ANALYZE run_steps;
ANALYZE series_points;
)sql";

// Issue 13: a regression has a kind. A drift (a slow creep) carries its figures (a
// RegressionDrift) and the started_at of its newest run, where an accepted drift's baseline
// starts; a series has at most one live drift.
constexpr char kRegressionKindSchema[] = R"sql(
ALTER TABLE regressions ADD COLUMN kind text NOT NULL DEFAULT 'step'
  CHECK (kind IN ('step', 'drift'));
ALTER TABLE regressions ADD COLUMN drift jsonb;
ALTER TABLE regressions ADD COLUMN drift_end_at timestamptz;
CREATE UNIQUE INDEX regressions_one_live_drift ON regressions (model, workload, instance_type, metric)
  WHERE kind = 'drift' AND state IN ('suspected', 'open', 'acknowledged');
)sql";

// Less PostgreSQL work per stored run (issue 10, ack p99 with 200 uploads in flight),
// measured with perf on the backends and pg_stat_statements:
//  - series_points' primary key (series_id, run_id, at) put each of a run's ~500 points in a
//    third index, at a random leaf per series. Nothing reads by it: the detector and the
//    dashboards read a series by (series_id, at) (series_points_by_time) and a run's points by
//    run_id (series_points_by_run). Nothing can duplicate it either: IngestRun writes a run's
//    points once, in the transaction whose INSERT of the run succeeded (run_id is runs'
//    primary key), one per series of the run.
//  - op_stats' primary key (run_id, op, at) compared operator names under the database's
//    collation for each of a run's ~500 rows. Every reader (fleet metrics) selects a run's
//    operators by run_id, which op_stats_by_run serves; operator names are unique within a
//    run (ValidateRun refuses a name that appears twice) and a run's rows are written once.
//  - runs.summary (tens of kB per run, deterministic protobuf) was compressed with pglz, a
//    tenth of PostgreSQL's CPU per run; lz4 is several times cheaper. Where the server was
//    built without lz4, summary keeps pglz.
constexpr char kLeanerIngestSchema[] = R"sql(
ALTER TABLE series_points DROP CONSTRAINT series_points_pkey;
ALTER TABLE op_stats DROP CONSTRAINT op_stats_pkey;
CREATE INDEX op_stats_by_run ON op_stats (run_id);
DO $$
BEGIN
  ALTER TABLE runs ALTER COLUMN summary SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  NULL;
END $$;
)sql";

// Issue 26: history outside the created months. Runs dated before the first partition
// (backfill imports, demo history) landed in the DEFAULT partitions, where retention never
// dropped them and every new month's creation scanned them. devtime_partition_default_rows()
// creates the month partitions that rows in DEFAULT (and runs without rows) need, moving the
// rows in (devtime_ensure_month); the migration runs it once, and the collector's
// housekeeping at start and every history interval (store/history.h), so imports are moved
// out too. Returns the number of partitions created.
const char* kDefaultRowsOut = R"sql(
CREATE FUNCTION devtime_partition_default_rows() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  m date;
  created integer := 0;
BEGIN
  FOR m IN SELECT date_trunc('month', at AT TIME ZONE 'UTC')::date FROM op_stats_default
           UNION SELECT date_trunc('month', at AT TIME ZONE 'UTC')::date FROM run_steps_default
           UNION SELECT date_trunc('month', at AT TIME ZONE 'UTC')::date FROM series_points_default
           UNION SELECT date_trunc('month', started_at AT TIME ZONE 'UTC')::date FROM runs LOOP
    created := created + devtime_ensure_month('op_stats', m)::integer
                       + devtime_ensure_month('run_steps', m)::integer
                       + devtime_ensure_month('series_points', m)::integer;
  END LOOP;
  RETURN created;
END $$;
SELECT devtime_partition_default_rows();
)sql";

// Issue 25: culprit hunts (hunt_store.h). A hunt per regression (its v1::Hunt as JSON), the
// culprit run's pins and tag on its run-now request, and culprit runs found by their tag.
constexpr char kHuntsSchema[] = R"sql(
CREATE TABLE hunts (
  regression_id bigint PRIMARY KEY REFERENCES regressions ON DELETE CASCADE,
  state         text NOT NULL
                CHECK (state IN ('none', 'hunting', 'culprit_found', 'no_culprit', 'inconclusive')),
  hunt          jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX hunts_hunting ON hunts (regression_id) WHERE state = 'hunting';
ALTER TABLE run_requests ADD COLUMN hunt jsonb;
CREATE INDEX runs_by_hunt ON runs ((environment->>'devtime.hunt')) WHERE environment ? 'devtime.hunt';
ALTER TABLE regression_events DROP CONSTRAINT regression_events_kind_check;
ALTER TABLE regression_events ADD CONSTRAINT regression_events_kind_check
  CHECK (kind IN ('opened', 'resolved', 'invalidated', 'hunted'));
)sql";

// Issue 24, between the nights: neuron-monitor windows (one per host, application and window)
// in their own table, partitioned by month of the window's start like the history (`at` is the
// window start, so devtime_ensure_month serves it too); and their regressions, of kind
// latency, keyed by the series group and the first bad window.
constexpr char kMonitorSchema[] = R"sql(
CREATE TABLE monitor_windows (
  run_id            uuid NOT NULL,
  at                timestamptz NOT NULL,  -- the window's start
  window_end        timestamptz NOT NULL,
  model             text NOT NULL,
  workload          text NOT NULL,
  instance_type     text NOT NULL,
  host              text NOT NULL,
  runtime_tag       text NOT NULL,
  neff_names        text[] NOT NULL,
  executions        bigint NOT NULL,
  errors            bigint NOT NULL,
  device_p50_us     double precision NOT NULL,
  device_p99_us     double precision NOT NULL,
  total_p99_us      double precision NOT NULL,
  utilization_pct   double precision NOT NULL,
  environment       jsonb NOT NULL,
  monitor           bytea NOT NULL,        -- the MonitorWindow message, sketches included
  received_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, at)
) PARTITION BY RANGE (at);
CREATE TABLE monitor_windows_default PARTITION OF monitor_windows DEFAULT;
CREATE INDEX monitor_windows_series ON monitor_windows (model, workload, instance_type, at);
CREATE INDEX monitor_windows_by_time ON monitor_windows (at DESC);

CREATE TABLE monitor_regressions (
  regression_id     bigserial PRIMARY KEY,
  kind              text NOT NULL DEFAULT 'latency' CHECK (kind IN ('latency')),
  state             text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'resolved')),
  model             text NOT NULL,
  workload          text NOT NULL,
  instance_type     text NOT NULL,
  window_start      timestamptz NOT NULL,  -- the first bad window's range
  window_end        timestamptz NOT NULL,
  last_good_window  timestamptz NOT NULL,
  metric            text NOT NULL,         -- the metric it was found on first
  before_us         double precision NOT NULL,
  after_us          double precision NOT NULL,
  relative_change   double precision NOT NULL,
  metrics           jsonb NOT NULL,        -- [{metric, before, after, relative_change, p_value}]
  hosts             jsonb NOT NULL,        -- hosts that moved: [{host, before, after}]
  versions          jsonb NOT NULL,        -- environment keys that changed: {key: {before, after}}
  nightly_run_id    uuid,                  -- the nearest nightly profile of the model
  summary           text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (model, workload, instance_type, window_start)
);
CREATE INDEX monitor_regressions_by_time ON monitor_regressions (window_start DESC);
)sql";

// Issue 24: latency regressions join the regression lifecycle. Migration 9 kept them apart
// (monitor_regressions: no acknowledge/resolve, not listed, never notified). They become rows
// of `regressions` of kind 'latency' so that every path that reads or moves a regression —
// list/show, triage, the transitions, the outbox (whose events reference regressions), the
// Alertmanager pass, the hunts, the dashboards — serves them with the same code and one id
// space (a union of two tables would give two regressions the same number). A latency
// regression has no runs of its own, so the run references become nullable (only for it);
// `latency` holds where it sits (a v1::LatencyWindow as JSON: window range, last good window,
// hosts that moved, the nearest nightly profile) and one latency regression per series group
// and first bad window is kept by a unique index. The rows of monitor_regressions move over
// with their creation transition; the open ones of the last 7 days (the outbox's horizon)
// get the 'opened' event they never had. Then monitor_regressions goes.
constexpr char kLatencyRegressionsSchema[] = R"sql(
ALTER TABLE regressions ALTER COLUMN last_good_run_id DROP NOT NULL;
ALTER TABLE regressions ALTER COLUMN first_bad_run_id DROP NOT NULL;
ALTER TABLE regressions DROP CONSTRAINT regressions_kind_check;
ALTER TABLE regressions ADD CONSTRAINT regressions_kind_check
  CHECK (kind IN ('step', 'drift', 'latency'));
ALTER TABLE regressions ADD CONSTRAINT regressions_runs_unless_latency
  CHECK (kind = 'latency' OR (last_good_run_id IS NOT NULL AND first_bad_run_id IS NOT NULL));
ALTER TABLE regressions ADD COLUMN latency jsonb;
CREATE UNIQUE INDEX regressions_one_latency_per_window
  ON regressions (model, workload, instance_type, first_bad_at) WHERE kind = 'latency';

INSERT INTO regressions (state, resolution, severity, model, workload, instance_type, job, host,
  metric, last_good_run_id, first_bad_run_id, first_bad_at, before_us, baseline_sigma_us,
  baseline_count, after_us, relative_change, z, confidence, series, attribution, summary,
  created_at, updated_at, fired_at, ended_at, kind, latency)
SELECT m.state, CASE WHEN m.state = 'resolved' THEN 'fixed' ELSE '' END,
  CASE WHEN m.relative_change >= 0.25 THEN 'critical'
       WHEN m.relative_change >= 0.05 THEN 'warning' ELSE 'info' END,
  m.model, m.workload, m.instance_type, '', '', m.metric, NULL, NULL, m.window_start,
  m.before_us, 0, 0, m.after_us, m.relative_change, 0,
  greatest(0, 1 - coalesce((m.metrics->0->>'p_value')::float8, 1)),
  (SELECT coalesce(jsonb_agg(jsonb_build_object('metric', e->>'metric', 'op', '',
     'before', (e->>'before')::float8, 'after', (e->>'after')::float8,
     'relative_change', (e->>'relative_change')::float8)), '[]')
   FROM jsonb_array_elements(m.metrics) e),
  jsonb_build_object('environment',
    (SELECT coalesce(jsonb_agg(jsonb_build_object('key', v.key, 'before', v.value->>'before',
       'after', v.value->>'after') ORDER BY v.key), '[]') FROM jsonb_each(m.versions) v)),
  m.summary, m.created_at, m.created_at, m.created_at,
  CASE WHEN m.state = 'resolved' THEN m.created_at END, 'latency',
  jsonb_build_object('window_start', to_char(m.window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'window_end', to_char(m.window_end AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'last_good_window', to_char(m.last_good_window AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'hosts', (SELECT coalesce(jsonb_agg(jsonb_build_object('host', h->>'host',
       'before', (h->>'before_us')::float8, 'after', (h->>'after_us')::float8)), '[]')
     FROM jsonb_array_elements(m.hosts) h),
    'nightly_run_id', coalesce(m.nightly_run_id::text, ''))
FROM monitor_regressions m ORDER BY m.regression_id;
INSERT INTO regression_transitions (regression_id, to_state, actor, reason, at)
  SELECT regression_id, state, 'detector', 'latency regression (moved from monitor_regressions)',
         created_at
  FROM regressions WHERE kind = 'latency';
INSERT INTO regression_events (regression_id, kind)
  SELECT regression_id, 'opened' FROM regressions
  WHERE kind = 'latency' AND state = 'open' AND created_at > now() - interval '7 days'
  ORDER BY regression_id;
DROP TABLE monitor_regressions;
)sql";

// Two ingests creating the same month (RunStore, issue 26) raced inside devtime_ensure_month:
// the second waited on the advisory lock while the first created the partition, then its
// to_regclass check still read the name as missing (the session's relation cache had cached
// the miss, and an advisory lock does not process catalog invalidations) and CREATE TABLE
// failed with duplicate_table. The creation now treats "it exists" as what it is: created by
// another transaction, false. Only the CREATE is guarded: any other error still fails.
constexpr char kEnsureMonthRace[] = R"sql(
CREATE OR REPLACE FUNCTION devtime_ensure_month(parent text, month date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  lo timestamptz := date_trunc('month', month::timestamp) AT TIME ZONE 'UTC';
  hi timestamptz := (date_trunc('month', month::timestamp) + interval '1 month') AT TIME ZONE 'UTC';
  part text := parent || '_' || to_char(month, 'YYYY"m"MM');
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('devtime-partitions'));
  IF to_regclass(part) IS NOT NULL THEN RETURN false; END IF;
  BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part, parent);
  EXCEPTION WHEN duplicate_table THEN
    RETURN false;
  END;
  EXECUTE format('WITH moved AS (DELETE FROM %I WHERE at >= $1 AND at < $2 RETURNING *)'
                 ' INSERT INTO %I SELECT * FROM moved', parent || '_default', part) USING lo, hi;
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                 parent, part, lo, hi);
  RETURN true;
END $$;
)sql";

}  // namespace

const std::vector<Migration>& AllMigrations() {
  static const std::vector<Migration> migrations = {
      {1, "runs, operator stats, steps and series", kInitialSchema},
      {2, "jobs, agents, job slots and run requests", kJobsSchema},
      {3, "agent tokens", kAgentTokensSchema},
      {4, "regressions, their transitions and the notification outbox", kRegressionsSchema},
      {5, "ingest fast path: no per-row foreign keys, the analysis queue's indexes",
       kIngestFastPath},
      {6, "history partitioned by month: op_stats, run_steps, series_points", kPartitionedHistory},
      {7, "regression kinds: step and drift", kRegressionKindSchema},
      {8, "leaner ingest: no unread keys on op_stats and series_points, lz4 summaries",
       kLeanerIngestSchema},
      {9, "between the nights: neuron-monitor windows and latency regressions", kMonitorSchema},
      {10, "culprit hunts: hunts, culprit run requests", kHuntsSchema},
      {11, "history outside the created months: default-partition rows moved to their months",
       kDefaultRowsOut},
      {12, "latency regressions in the regression lifecycle: monitor_regressions moved in",
       kLatencyRegressionsSchema},
      {13, "partitions: a month created by a concurrent ingest is not an error", kEnsureMonthRace},
  };
  return migrations;
}

absl::StatusOr<int> ApplyMigrations(pqxx::connection_base& connection) {
  {
    pqxx::work tx{connection};
    tx.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
    tx.exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version integer PRIMARY KEY, name text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())");
    tx.commit();
  }
  int current = 0;
  for (const Migration& migration : AllMigrations()) {
    pqxx::work tx{connection};
    tx.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
    auto applied =
        tx.exec_params("SELECT 1 FROM schema_migrations WHERE version = $1", migration.version);
    if (applied.empty()) {
      tx.exec(migration.sql);
      tx.exec_params("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                     migration.version, migration.name);
    }
    tx.commit();
    current = migration.version;
  }
  pqxx::nontransaction read{connection};
  int newest = read.exec("SELECT coalesce(max(version), 0) FROM schema_migrations")[0][0].as<int>();
  if (newest > current) {
    return absl::FailedPreconditionError("database schema is at version " + std::to_string(newest) +
                                         " but this collector knows " + std::to_string(current) +
                                         ": upgrade the collector");
  }
  return current;
}

}  // namespace devtime::store
