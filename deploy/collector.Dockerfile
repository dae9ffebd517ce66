# devtime-collector (and devtimectl) from Debian bookworm packages, for deploy/docker-compose.yml.
#
#   docker build -f deploy/collector.Dockerfile -t devtime-collector .    (from the repository root)
#
# Build stage: the build subset of deploy/install-deps.sh (no PostgreSQL server, torch or
# browsers; tests/dashboards checks that every package here is on that list).
FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      protobuf-compiler libprotobuf-dev protobuf-compiler-grpc libgrpc++-dev \
      libpqxx-dev libssl-dev prometheus-cpp-dev libcurl4-openssl-dev \
      nlohmann-json3-dev libsimdjson-dev libcli11-dev libyaml-cpp-dev zlib1g-dev \
      libgtest-dev libgmock-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEVTIME_BUILD_TESTS=OFF \
 && cmake --build /build -j "$(nproc)" --target devtime-collector devtimectl

# Runtime stage: only the shared libraries the two executables link.
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libgrpc++1.51 libprotobuf32 libpqxx-6.4 \
      libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home-dir /var/lib/devtime --create-home devtime
COPY --from=build /build/bin/devtime-collector /build/bin/devtimectl /usr/local/bin/
USER devtime
WORKDIR /var/lib/devtime
# gRPC (agents, devtimectl) and /metrics (Prometheus).
EXPOSE 50051 9464
ENTRYPOINT ["/usr/local/bin/devtime-collector"]
CMD ["--help"]
