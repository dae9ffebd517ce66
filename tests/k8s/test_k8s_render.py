#!/usr/bin/env python3
"""deploy/k8s cannot be applied here (no cluster), so this renders it with `kubectl kustomize`
(Debian's kubernetes-client, or $KUBECTL) and checks the objects: the kinds are there, the
collector has its gRPC health probes, every selector picks the pods it is for, every container
has resources, images are pinned, the agent stays on Trainium nodes with a Neuron device and a
hostPath spool, and every dashboard is a ConfigMap for Grafana's sidecar.

The checks must be able to fail: the second half breaks one thing at a time (in the rendered
objects, and once in a copy of the base itself) and requires the matching check to say so.

usage: test_k8s_render.py [-v]
"""
import copy
import os
import shutil
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_checks as k8s  # noqa: E402


RENDERED = []


def setUpModule():
    # Once for all tests (a base that does not render is one error, not one per check).
    RENDERED.extend(k8s.render())


def rendered():
    return copy.deepcopy(RENDERED)


class RenderedBase(unittest.TestCase):
    """The base as it is passes every check."""

    def test_every_check_passes(self):
        docs = rendered()
        for check in k8s.ALL_CHECKS:
            with self.subTest(check=check.__name__):
                self.assertEqual([], check(docs))

    def test_what_it_renders(self):
        kinds = sorted({d["kind"] for d in rendered()})
        self.assertEqual(kinds, ["ConfigMap", "DaemonSet", "Deployment", "Namespace",
                                 "NetworkPolicy", "PodDisruptionBudget", "PodMonitor", "Secret",
                                 "Service", "ServiceMonitor"])


def collector(docs):
    return next(c for c in k8s.pod_spec(k8s.the(docs, "Deployment", k8s.COLLECTOR))["containers"]
                if c["name"] == "collector")


def agent_spec(docs):
    return k8s.pod_spec(k8s.the(docs, "DaemonSet", k8s.AGENT))


def agent(docs):
    return agent_spec(docs)["containers"][0]


def instance_types(docs):
    terms = agent_spec(docs)["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return terms[0]["matchExpressions"][0]["values"]


def volume(docs, name):
    return next(v for v in agent_spec(docs)["volumes"] if v["name"] == name)


# (what is broken, the check that must notice, how to break it)
BREAKAGES = [
    ("image tag latest", k8s.check_images,
     lambda d: collector(d).update(image="devtime-collector:latest")),
    ("image without a tag", k8s.check_images,
     lambda d: agent(d).update(image="registry.example:5000/devtime-agent")),
    ("image of another version", k8s.check_images,
     lambda d: agent(d).update(image="devtime-agent:0.0.9")),
    ("no readiness probe", k8s.check_collector, lambda d: collector(d).pop("readinessProbe")),
    ("liveness probe over HTTP", k8s.check_collector,
     lambda d: collector(d).update(livenessProbe={"httpGet": {"port": 9464}})),
    ("readiness ignores the database", k8s.check_collector,
     lambda d: collector(d)["readinessProbe"]["grpc"].pop("service")),
    ("one collector", k8s.check_collector,
     lambda d: k8s.the(d, "Deployment", k8s.COLLECTOR)["spec"].update(replicas=1)),
    ("collector listens on loopback", k8s.check_collector,
     lambda d: collector(d)["args"].remove("--listen=0.0.0.0:50051")),
    ("database string in the manifest", k8s.check_collector,
     lambda d: collector(d).update(env=[{"name": "DEVTIME_DATABASE", "value": "host=db"}])),
    ("no anti-affinity", k8s.check_collector,
     lambda d: k8s.pod_spec(k8s.the(d, "Deployment", k8s.COLLECTOR)).pop("affinity")),
    ("collector as root", k8s.check_collector,
     lambda d: k8s.pod_spec(k8s.the(d, "Deployment", k8s.COLLECTOR))["securityContext"].update(
         runAsNonRoot=False, runAsUser=0)),
    ("Service selector with a typo", k8s.check_selectors,
     lambda d: k8s.the(d, "Service", k8s.COLLECTOR)["spec"]["selector"].update(
         {"app.kubernetes.io/name": "devtime-colector"})),
    ("Service port to a missing container port", k8s.check_selectors,
     lambda d: k8s.the(d, "Service", k8s.COLLECTOR)["spec"]["ports"][0].update(targetPort="grpcs")),
    ("PDB selector on another label", k8s.check_selectors,
     lambda d: k8s.the(d, "PodDisruptionBudget", k8s.COLLECTOR)["spec"].update(
         selector={"matchLabels": {"app": "devtime-collector"}})),
    ("ServiceMonitor selector with a typo", k8s.check_selectors,
     lambda d: k8s.the(d, "ServiceMonitor", k8s.COLLECTOR)["spec"]["selector"].update(
         matchLabels={"app.kubernetes.io/name": "collector"})),
    ("ServiceMonitor on a port the Service lacks", k8s.check_selectors,
     lambda d: k8s.the(d, "ServiceMonitor", k8s.COLLECTOR)["spec"]["endpoints"][0].update(
         port="http-metrics")),
    ("PodMonitor selector with a typo", k8s.check_selectors,
     lambda d: k8s.the(d, "PodMonitor", k8s.AGENT)["spec"]["selector"].update(
         matchLabels={"app.kubernetes.io/name": "agent"})),
    ("scrape job renamed", k8s.check_scrape_jobs,
     lambda d: k8s.the(d, "PodMonitor", k8s.AGENT)["spec"].pop("jobLabel")),
    ("no honorLabels", k8s.check_scrape_jobs,
     lambda d: k8s.the(d, "ServiceMonitor", k8s.COLLECTOR)["spec"]["endpoints"][0].pop(
         "honorLabels")),
    ("container without resources", k8s.check_resources,
     lambda d: agent_spec(d)["initContainers"][0].pop("resources")),
    ("container without a memory limit", k8s.check_resources,
     lambda d: collector(d)["resources"].pop("limits")),
    ("agent on any node", k8s.check_agent, lambda d: agent_spec(d).pop("affinity")),
    ("agent on an m5 node too", k8s.check_agent, lambda d: instance_types(d).append("m5.large")),
    ("agent without trn3", k8s.check_agent,
     lambda d: instance_types(d).__setitem__(slice(None), ["trn1.32xlarge", "trn2.48xlarge"])),
    ("agent without a Neuron device", k8s.check_agent,
     lambda d: agent(d)["resources"]["limits"].pop(k8s.NEURON_RESOURCE)),
    ("host network with the host's DNS", k8s.check_agent,
     lambda d: agent_spec(d).pop("dnsPolicy")),
    ("spool on an emptyDir", k8s.check_agent,
     lambda d: volume(d, "spool").update(emptyDir={}) or volume(d, "spool").pop("hostPath")),
    ("token not from a Secret", k8s.check_agent,
     lambda d: volume(d, "token").update(emptyDir={}) or volume(d, "token").pop("secret")),
    ("agent dials the plaintext port", k8s.check_agent,
     lambda d: k8s.the(d, "Service", k8s.COLLECTOR)["spec"]["ports"][0].update(targetPort="grpc")),
    ("agent dials another address", k8s.check_agent,
     lambda d: k8s.the(d, "Service", k8s.COLLECTOR)["spec"]["ports"][0].update(port=50051)),
    ("Secret name with a typo", k8s.check_references,
     lambda d: volume(d, "collector-ca")["secret"].update(secretName="devtime-collector-ca")),
    ("Secret key that is not there", k8s.check_references,
     lambda d: collector(d)["env"][0]["valueFrom"]["secretKeyRef"].update(key="uri")),
    ("a real token in the base", k8s.check_secrets_are_templates,
     lambda d: k8s.the(d, "Secret", "devtime-admin-token")["stringData"].update(
         {"admin.token": "3f6c0d1e9a8b7c6d5e4f3a2b1c0d9e8f"})),
    ("dashboard without the sidecar label", k8s.check_dashboards,
     lambda d: k8s.the(d, "ConfigMap", "devtime-dashboard-fleet")["metadata"].pop("labels")),
    ("dashboard ConfigMap missing", k8s.check_dashboards,
     lambda d: d.remove(k8s.the(d, "ConfigMap", "devtime-dashboard-model"))),
    ("no PodDisruptionBudget", k8s.check_kinds,
     lambda d: d.remove(k8s.the(d, "PodDisruptionBudget", k8s.COLLECTOR))),
    ("no NetworkPolicy", k8s.check_network_policy,
     lambda d: d.remove(k8s.the(d, "NetworkPolicy", k8s.COLLECTOR))),
    ("NetworkPolicy selector with a typo", k8s.check_network_policy,
     lambda d: k8s.the(d, "NetworkPolicy", k8s.COLLECTOR)["spec"]["podSelector"].update(
         matchLabels={"app.kubernetes.io/name": "devtime-colector"})),
    ("NetworkPolicy admits the plaintext port", k8s.check_network_policy,
     lambda d: k8s.the(d, "NetworkPolicy", k8s.COLLECTOR)["spec"]["ingress"].append(
         {"ports": [{"port": 50051, "protocol": "TCP"}]})),
    ("NetworkPolicy rule without ports", k8s.check_network_policy,
     lambda d: k8s.the(d, "NetworkPolicy", k8s.COLLECTOR)["spec"]["ingress"].append(
         {"from": [{"namespaceSelector": {}}]})),
    ("NetworkPolicy without the TLS port", k8s.check_network_policy,
     lambda d: k8s.the(d, "NetworkPolicy", k8s.COLLECTOR)["spec"]["ingress"].pop(0)),
]


class ChecksCatchBrokenObjects(unittest.TestCase):
    def test_each_breakage_is_reported(self):
        for what, check, breaks in BREAKAGES:
            with self.subTest(breakage=what):
                docs = rendered()
                self.assertEqual([], check(docs), "passes before it is broken")
                breaks(docs)
                self.assertNotEqual([], check(docs), f"{check.__name__} missed: {what}")

    def test_a_broken_copy_of_the_base_is_reported(self):
        # The same through kustomize: a copy of the base (with the dashboards it pulls in, at
        # the same relative place) whose `images:` override says latest.
        with tempfile.TemporaryDirectory() as tmp:
            base = os.path.join(tmp, "deploy", "k8s")
            shutil.copytree(k8s.BASE_DIR, base)
            shutil.copytree(k8s.DASHBOARDS_DIR, os.path.join(tmp, "dashboards"))
            path = os.path.join(base, "kustomization.yaml")
            with open(path) as f:
                kustomization = yaml.safe_load(f)
            for image in kustomization["images"]:
                if image["name"] == "devtime-agent":
                    image["newTag"] = "latest"
            with open(path, "w") as f:
                yaml.safe_dump(kustomization, f)
            problems = k8s.check_images(k8s.render(base))
        self.assertTrue(any("devtime-agent:latest" in p for p in problems), problems)


if __name__ == "__main__":
    unittest.main()
