#!/usr/bin/env python3
"""deploy/ha/k8s (pg_auto_failover: a monitor and three PostgreSQL nodes) rendered by
`kubectl kustomize` and checked without a cluster: the general checks of test_k8s_render.py
(selectors, resources, pinned images) and the HA ones: three nodes spread over machines, one
monitor, volumes per pod, a disruption budget that keeps a primary and a synchronous standby,
and an entry point that creates each node against the monitor. The second half breaks one
thing at a time and requires the matching check to say so.

usage: test_ha_render.py [-v]
"""
import copy
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_checks as k8s  # noqa: E402

HA_DIR = os.path.join(k8s.SOURCE_DIR, "deploy", "ha", "k8s")
NODES = "devtime-pgaf-node"
MONITOR = "devtime-pgaf-monitor"
RENDERED = []


def setUpModule():
    RENDERED.extend(k8s.render(HA_DIR))


def rendered():
    return copy.deepcopy(RENDERED)


def check_topology(docs):
    problems = []
    nodes, monitor = k8s.the(docs, "StatefulSet", NODES), k8s.the(docs, "StatefulSet", MONITOR)
    if nodes is None or monitor is None:
        return [f"no StatefulSet {NODES} and {MONITOR}"]
    if nodes["spec"].get("replicas") != 3:
        problems.append(f"{NODES}: {nodes['spec'].get('replicas')} replicas, not 3")
    if monitor["spec"].get("replicas") != 1:
        problems.append(f"{MONITOR}: not exactly one monitor")
    for workload in (nodes, monitor):
        if not workload["spec"].get("volumeClaimTemplates"):
            problems.append(f"{k8s.where(workload)}: no volume per pod")
        service = k8s.the(docs, "Service", workload["spec"].get("serviceName"))
        if service is None or service["spec"].get("clusterIP") != "None":
            problems.append(f"{k8s.where(workload)}: no headless Service for stable names")
    anti = k8s.pod_spec(nodes).get("affinity", {}).get("podAntiAffinity", {})
    if not anti.get("requiredDuringSchedulingIgnoredDuringExecution"):
        problems.append(f"{NODES}: nodes may share a machine (no required podAntiAffinity)")
    return problems


def check_disruptions(docs):
    pdbs = [p for p in k8s.named(docs, "PodDisruptionBudget")
            if k8s.selects(p["spec"]["selector"].get("matchLabels"),
                           k8s.pod_labels(k8s.the(docs, "StatefulSet", NODES)))]
    if not pdbs or pdbs[0]["spec"].get("maxUnavailable") != 1:
        return [f"{NODES}: no PodDisruptionBudget with maxUnavailable 1"]
    return []


def check_entry_point(docs):
    start = [c for c in k8s.named(docs, "ConfigMap") if "start.sh" in c.get("data", {})]
    if not start:
        return ["no ConfigMap with start.sh"]
    script = start[0]["data"]["start.sh"]
    return [f"start.sh: no `{needle}`" for needle in
            ("pg_autoctl create monitor", "pg_autoctl create postgres", "--monitor",
             "exec pg_autoctl run", "--dbname devtime")
            if needle not in script]


HA_CHECKS = [check_topology, check_disruptions, check_entry_point,
             k8s.check_selectors, k8s.check_resources, k8s.check_images]


class RenderedHa(unittest.TestCase):
    def test_every_check_passes(self):
        for check in HA_CHECKS:
            with self.subTest(check=check.__name__):
                self.assertEqual([], check(rendered()))

    def test_what_it_renders(self):
        self.assertEqual(sorted({d["kind"] for d in rendered()}),
                         ["ConfigMap", "PodDisruptionBudget", "Service", "StatefulSet"])


class BrokenHa(unittest.TestCase):
    def broken(self, check, breaker, expected):
        docs = rendered()
        breaker(docs)
        problems = check(docs)
        self.assertTrue(any(expected in p for p in problems), problems)

    def test_two_nodes(self):
        self.broken(check_topology, lambda d: k8s.the(d, "StatefulSet", NODES)["spec"].update(
            replicas=2), "2 replicas")

    def test_nodes_on_one_machine(self):
        self.broken(check_topology,
                    lambda d: k8s.pod_spec(k8s.the(d, "StatefulSet", NODES)).pop("affinity"),
                    "may share a machine")

    def test_no_volume(self):
        self.broken(check_topology, lambda d: k8s.the(d, "StatefulSet", MONITOR)["spec"].pop(
            "volumeClaimTemplates"), "no volume per pod")

    def test_budget_too_loose(self):
        self.broken(check_disruptions, lambda d: k8s.named(d, "PodDisruptionBudget")[0]["spec"]
                    .update(maxUnavailable=2), "maxUnavailable 1")

    def test_entry_point_never_runs(self):
        def breaker(docs):
            config = [c for c in k8s.named(docs, "ConfigMap") if "start.sh" in c["data"]][0]
            config["data"]["start.sh"] = config["data"]["start.sh"].replace("exec pg_autoctl run",
                                                                            "sleep infinity")
        self.broken(check_entry_point, breaker, "exec pg_autoctl run")

    def test_unpinned_image(self):
        def breaker(docs):
            k8s.pod_spec(k8s.the(docs, "StatefulSet", NODES))["containers"][0]["image"] = "pg"
        self.broken(k8s.check_images, breaker, "not pinned")


if __name__ == "__main__":
    unittest.main()
