# The image of deploy/ha/k8s: Debian's PostgreSQL 15 with pg_auto_failover 2.0 (the same
# packages as deploy/install-deps.sh), run as the postgres user.
#   docker build -f deploy/ha/k8s/pgaf.Dockerfile -t pg-auto-failover:15-2.0 deploy/ha/k8s
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      postgresql-15 postgresql-15-auto-failover pg-auto-failover-cli \
    && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
USER postgres
