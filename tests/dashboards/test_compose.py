#!/usr/bin/env python3
"""deploy/docker-compose.yml cannot run here (no Docker engine), so this checks what can be
checked without one: it is valid YAML with the five services, every file and folder it mounts
or builds from exists, its images are pinned, and it agrees with the configuration it mounts
(Prometheus scrape targets and Grafana data sources name its services and ports; the
collector image's packages are bookworm's).

usage: test_compose.py [-v]
"""
import os
import re
import subprocess
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashlib  # noqa: E402

DEPLOY = os.path.join(dashlib.SOURCE_DIR, "deploy")
COMPOSE = os.path.join(DEPLOY, "docker-compose.yml")


def load_yaml(path):
    with open(path) as f:
        return yaml.safe_load(f)


def bind_mounts(service):
    """[(source relative to deploy/, target)] of a service's bind mounts (not named volumes)."""
    mounts = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            if volume.get("type") == "bind":
                mounts.append((volume["source"], volume["target"]))
            continue
        source, target = volume.split(":")[:2]
        if source.startswith((".", "/")):
            mounts.append((source, target))
    return mounts


class Compose(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.compose = load_yaml(COMPOSE)
        cls.services = cls.compose["services"]

    def test_the_five_services(self):
        self.assertEqual(set(self.services),
                         {"postgres", "collector", "prometheus", "alertmanager", "grafana"})

    def test_every_mounted_file_exists(self):
        count = 0
        for name, service in self.services.items():
            for source, target in bind_mounts(service):
                with self.subTest(service=name, mount=source):
                    path = os.path.normpath(os.path.join(DEPLOY, source))
                    self.assertTrue(os.path.exists(path), f"{source} does not exist")
                    # a file mounted on a file path, a folder on a folder path
                    looks_like_file = bool(re.search(r"\.(ya?ml|sh|json|sql)$", target))
                    self.assertEqual(os.path.isfile(path), looks_like_file, f"{source} -> {target}")
                    count += 1
        self.assertGreaterEqual(count, 8)

    def test_named_volumes_are_declared(self):
        declared = set(self.compose.get("volumes", {}))
        for name, service in self.services.items():
            for volume in service.get("volumes", []):
                source = volume.split(":")[0]
                if not source.startswith((".", "/")):
                    self.assertIn(source, declared, f"{name}: volume {source}")

    def test_the_collector_builds_from_this_repository(self):
        build = self.services["collector"]["build"]
        context = os.path.normpath(os.path.join(DEPLOY, build["context"]))
        self.assertEqual(context, dashlib.SOURCE_DIR)
        dockerfile = os.path.join(context, build["dockerfile"])
        self.assertTrue(os.path.isfile(dockerfile))
        self.assertTrue(os.path.isfile(dockerfile + ".dockerignore"),
                        "without it the build context carries the build folders")
        with open(dockerfile) as f:
            text = f.read()
        self.assertRegex(text, r"(?m)^FROM debian:bookworm\b")
        for source in re.findall(r"(?m)^COPY --from=build (.+) \S+$", text):
            for path in source.split():
                self.assertRegex(path, r"^/build/bin/devtime(-collector|ctl)$")

    def test_images_are_pinned(self):
        for name, service in self.services.items():
            image = service.get("image", "")
            with self.subTest(service=name):
                self.assertRegex(image, r":[\w.-]+$")
                self.assertNotRegex(image, r":latest$")

    def test_secrets_come_from_the_environment(self):
        for name, service in self.services.items():
            for key, value in (service.get("environment") or {}).items():
                with self.subTest(service=name, variable=key):
                    if "PASSWORD" in key:
                        self.assertTrue(str(value).startswith("${"), "a literal password")
                    for literal in re.findall(r"password=(\S+)", str(value)):
                        self.assertTrue(literal.startswith("${"), "a literal password")

    def test_prometheus_scrapes_the_services_on_their_ports(self):
        prometheus = load_yaml(os.path.join(DEPLOY, "prometheus", "prometheus.yml"))
        jobs = {j["job_name"]: j for j in prometheus["scrape_configs"]}
        collector_targets = [t for sc in jobs["devtime-collector"]["static_configs"]
                             for t in sc["targets"]]
        command = " ".join(self.services["collector"]["command"])
        port = re.search(r"--metrics-listen=\S*:(\d+)", command).group(1)
        self.assertEqual(collector_targets, [f"collector:{port}"])
        alertmanagers = [t for am in prometheus["alerting"]["alertmanagers"]
                         for sc in am["static_configs"] for t in sc["targets"]]
        self.assertEqual(alertmanagers, ["alertmanager:9093"])
        # the mounted config, rules and targets land where prometheus.yml looks for them
        mounts = dict((t, s) for s, t in bind_mounts(self.services["prometheus"]))
        self.assertEqual(mounts["/etc/prometheus/prometheus.yml"], "./prometheus/prometheus.yml")
        self.assertEqual(mounts["/etc/prometheus/rules"], "./prometheus/rules")
        self.assertEqual(mounts["/etc/prometheus/targets"], "./prometheus/targets")

    def test_grafana_gets_the_provisioning_and_the_dashboards(self):
        mounts = dict((t, s) for s, t in bind_mounts(self.services["grafana"]))
        provider = load_yaml(os.path.join(dashlib.PROVISIONING_DIR, "dashboards",
                                          "devtime.yaml"))
        path = provider["providers"][0]["options"]["path"]
        self.assertEqual(os.path.normpath(os.path.join(DEPLOY, mounts[path])),
                         dashlib.DASHBOARD_DIR)
        for kind in ("datasources", "dashboards"):
            source = mounts[f"/etc/grafana/provisioning/{kind}"]
            self.assertEqual(os.path.normpath(os.path.join(DEPLOY, source)),
                             os.path.join(dashlib.PROVISIONING_DIR, kind))

    def test_grafana_datasources_point_at_the_services(self):
        doc = load_yaml(os.path.join(dashlib.PROVISIONING_DIR, "datasources", "devtime.yaml"))
        by_type = {d["type"]: d for d in doc["datasources"]}
        self.assertEqual(by_type["prometheus"]["url"], "http://prometheus:9090")
        pg = by_type["grafana-postgresql-datasource"]
        self.assertEqual(pg["url"], "postgres:5432")
        env = self.services["postgres"]["environment"]
        self.assertEqual(pg["jsonData"]["database"], env["POSTGRES_DB"])
        # the read-only role the init script creates, with the password Grafana is given
        with open(os.path.join(DEPLOY, "grafana", "readonly-role.sh")) as f:
            self.assertIn(f"DEVTIME_GRAFANA_PG_USER:-{pg['user']}", f.read())
        self.assertIn("DEVTIME_GRAFANA_PG_PASSWORD", pg["secureJsonData"]["password"])
        self.assertIn("DEVTIME_GRAFANA_PG_PASSWORD", self.services["grafana"]["environment"])
        self.assertIn("DEVTIME_GRAFANA_PG_PASSWORD", env)

    def test_the_collector_image_packages_are_debian_packages_we_know(self):
        with open(os.path.join(DEPLOY, "collector.Dockerfile")) as f:
            stages = f.read().split("\nFROM ")[1:]
        with open(os.path.join(DEPLOY, "install-deps.sh")) as f:
            deps = f.read()
        listed = set(re.findall(r"[a-z0-9][a-z0-9.+-]+",
                                deps[deps.index("PACKAGES=("):deps.index(")", deps.index(
                                    "PACKAGES=("))]))

        def packages(stage):
            text = stage.replace("\\\n", " ")
            m = re.search(r"apt-get install -y --no-install-recommends ([^&]+)", text)
            return m.group(1).split()

        build, runtime = packages(stages[0]), packages(stages[1])
        self.assertTrue(set(build) <= listed, set(build) - listed)
        # the runtime libraries are what the -dev packages pulled in here: installed
        for package in runtime:
            if package == "ca-certificates":
                continue
            with self.subTest(package=package):
                result = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                                        capture_output=True, text=True)
                self.assertIn("install ok installed", result.stdout,
                              f"{package} is not a bookworm package installed with the -dev "
                              "packages")


if __name__ == "__main__":
    unittest.main()
