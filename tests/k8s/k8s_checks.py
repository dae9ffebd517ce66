"""Checks on the rendered Kubernetes base (deploy/k8s), no cluster needed.

render() runs `kubectl kustomize` (Debian's kubernetes-client, or $KUBECTL); each check_*()
takes the rendered objects and returns a list of problems, empty when the objects hold. The
checks are plain functions so that test_k8s_render.py can also run them on broken copies.
"""
import functools
import glob
import os
import re
import shutil
import subprocess

import yaml  # python3-yaml (a dependency of Debian's python3-torch)

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE_DIR = os.path.join(SOURCE_DIR, "deploy", "k8s")
DASHBOARDS_DIR = os.path.join(SOURCE_DIR, "dashboards")
PROMETHEUS_CONFIG = os.path.join(SOURCE_DIR, "deploy", "prometheus", "prometheus.yml")

COLLECTOR = "devtime-collector"
AGENT = "devtime-agent"
HEALTH_SERVICE = "devtime.v1.Collector"  # grpc.health.v1 status that follows the database
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
TRAINIUM_FAMILIES = {"trn1", "trn1n", "trn2", "trn3"}
NEURON_RESOURCE = "aws.amazon.com/neuron"
DASHBOARD_LABEL = ("grafana_dashboard", "1")
PLACEHOLDER = "REPLACE-ME"
# `kubectl apply` (client side) keeps the whole object in an annotation of at most 256 KiB.
MAX_APPLIED_BYTES = 262144


def kubectl():
    return os.environ.get("KUBECTL") or shutil.which("kubectl")


def render(base_dir=BASE_DIR):
    """The objects `kubectl kustomize base_dir` prints."""
    binary = kubectl()
    if not binary:
        raise RuntimeError("no kubectl: apt-get install kubernetes-client (or set KUBECTL)")
    result = subprocess.run([binary, "kustomize", base_dir], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {base_dir} failed:\n{result.stderr}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def project_version():
    with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
        return re.search(r"project\(devtime VERSION ([0-9.]+)", f.read()).group(1)


# ---- helpers ---------------------------------------------------------------------------------

def named(docs, kind, name=None):
    return [d for d in docs
            if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def the(docs, kind, name):
    found = named(docs, kind, name)
    return found[0] if len(found) == 1 else None


def workloads(docs):
    return [d for d in docs if d["kind"] in ("Deployment", "DaemonSet", "StatefulSet")]


def pod_labels(workload):
    return workload["spec"]["template"]["metadata"].get("labels", {})


def pod_spec(workload):
    return workload["spec"]["template"]["spec"]


def containers(spec, init=True):
    return spec.get("containers", []) + (spec.get("initContainers", []) if init else [])


def selects(match_labels, labels):
    return bool(match_labels) and all(labels.get(k) == v for k, v in match_labels.items())


def namespace(doc):
    return doc["metadata"].get("namespace")


def where(doc):
    return f'{doc["kind"]}/{doc["metadata"]["name"]}'


def container_ports(workload):
    ports = set()
    for c in containers(pod_spec(workload), init=False):
        for p in c.get("ports", []):
            ports.update({p["containerPort"], p.get("name")})
    return ports - {None}


def secret_data(secret):
    return {**secret.get("data", {}), **secret.get("stringData", {})}


def workload_container(docs, kind, name, container):
    """(workload, its pod spec, its container named `container`), or a problem string."""
    workload = the(docs, kind, name)
    if workload is None:
        return f"no {kind} {name}"
    found = [c for c in pod_spec(workload)["containers"] if c["name"] == container]
    if not found:
        return f"{kind}/{name}: no container named {container}"
    return workload, pod_spec(workload), found[0]


def of_workload(kind, name, container):
    """Makes check(docs, workload, pod_spec, container) a check of the rendered objects, run on
    the workload `kind`/`name` and its container `container`; when either is missing, that is
    the one problem."""
    def wrap(check):
        @functools.wraps(check)
        def run(docs):
            found = workload_container(docs, kind, name, container)
            return [found] if isinstance(found, str) else check(docs, *found)
        return run
    return wrap


def mounted_from(workload, container, path):
    """The volume that holds `path` in `container` (longest mountPath prefix), with its mount."""
    best = None
    for mount in container.get("volumeMounts", []):
        root = mount["mountPath"].rstrip("/")
        if (path == root or path.startswith(root + "/")) and (
                best is None or len(root) > len(best[1]["mountPath"])):
            volume = next((v for v in pod_spec(workload).get("volumes", [])
                           if v["name"] == mount["name"]), None)
            best = (volume, mount)
    return best or (None, None)


# ---- checks ----------------------------------------------------------------------------------

def check_kinds(docs):
    problems = []
    expected = [("Namespace", None), ("Deployment", COLLECTOR), ("Service", COLLECTOR),
                ("PodDisruptionBudget", COLLECTOR), ("DaemonSet", AGENT),
                ("ServiceMonitor", COLLECTOR), ("PodMonitor", AGENT),
                ("Secret", "devtime-database"), ("Secret", "devtime-admin-token"),
                ("Secret", "devtime-collector-tls"), ("Secret", "devtime-agent-tokens")]
    for kind, name in expected:
        if not named(docs, kind, name):
            problems.append(f"no {kind}" + (f" {name}" if name else ""))
    for doc in docs:
        if doc["kind"] == "ServiceMonitor" or doc["kind"] == "PodMonitor":
            if doc["apiVersion"] != "monitoring.coreos.com/v1":
                problems.append(f"{where(doc)}: apiVersion {doc['apiVersion']}")
    spaces = {namespace(d) for d in docs if d["kind"] != "Namespace"}
    if len(spaces) != 1 or None in spaces:
        problems.append(f"objects are not all in one namespace: {spaces}")
    return problems


@of_workload("Deployment", COLLECTOR, "collector")
def check_collector(docs, deployment, spec, collector):
    problems = []
    if deployment["spec"].get("replicas", 1) < 2:
        problems.append("collector: fewer than 2 replicas")
    args = collector.get("args", [])
    for flag in ("--listen=0.0.0.0:50051", "--metrics-listen=0.0.0.0:9464"):
        if flag not in args:
            problems.append(f"collector: no {flag}")
    grpc_port = next((p["containerPort"] for p in collector.get("ports", [])
                      if p.get("name") == "grpc"), None)
    for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
        probe = collector.get(kind, {}).get("grpc")
        if not probe:
            problems.append(f"collector: no grpc {kind}")
        elif probe.get("port") != grpc_port:
            problems.append(f"collector: {kind} on port {probe.get('port')}, not grpc {grpc_port}")
    readiness = collector.get("readinessProbe", {}).get("grpc", {})
    if readiness.get("service") != HEALTH_SERVICE:
        problems.append(f"collector: readiness does not ask for {HEALTH_SERVICE}")
    # The database connection string and the admin token come from Secrets.
    env = {e["name"]: e for e in collector.get("env", [])}
    ref = env.get("DEVTIME_DATABASE", {}).get("valueFrom", {}).get("secretKeyRef")
    if not ref:
        problems.append("collector: DEVTIME_DATABASE is not read from a Secret")
    token_file = next((a.split("=", 1)[1] for a in args
                       if a.startswith("--admin-token-file=")), None)
    volume, _ = mounted_from(deployment, collector, token_file or "")
    if not token_file or not volume or "secret" not in volume:
        problems.append("collector: --admin-token-file is not mounted from a Secret")
    # Spread over nodes, non-root everywhere.
    terms = spec.get("affinity", {}).get("podAntiAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", [])
    terms += [t["podAffinityTerm"] for t in spec.get("affinity", {}).get("podAntiAffinity", {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution", [])]
    if not any(t.get("topologyKey") == "kubernetes.io/hostname"
               and selects(t.get("labelSelector", {}).get("matchLabels"), pod_labels(deployment))
               for t in terms):
        problems.append("collector: no pod anti-affinity by kubernetes.io/hostname on its own pods")
    if spec.get("securityContext", {}).get("runAsNonRoot") is not True:
        problems.append("collector: pod securityContext.runAsNonRoot is not true")
    for c in containers(spec):
        user = c.get("securityContext", {}).get("runAsUser",
                                                spec.get("securityContext", {}).get("runAsUser"))
        if not user:
            problems.append(f"collector: container {c['name']} runs as root or an unknown user")
    return problems


def check_selectors(docs):
    """Every selector picks the pods (or Services) it is for, and the ports it names exist."""
    problems = []
    pods = workloads(docs)
    for w in pods:
        if not selects(w["spec"]["selector"].get("matchLabels"), pod_labels(w)):
            problems.append(f"{where(w)}: selector does not match its own pod labels")

    def targets(selector, ns):
        return [w for w in pods if namespace(w) == ns and selects(selector, pod_labels(w))]

    for service in named(docs, "Service"):
        chosen = targets(service["spec"].get("selector"), namespace(service))
        if not chosen:
            problems.append(f"{where(service)}: selector matches no pods")
        for port in service["spec"]["ports"]:
            for w in chosen:
                if port.get("targetPort", port["port"]) not in container_ports(w):
                    problems.append(f"{where(service)}: port {port.get('name')} targets "
                                    f"{port.get('targetPort')}, which {where(w)} does not have")
    for pdb in named(docs, "PodDisruptionBudget"):
        if not targets(pdb["spec"]["selector"].get("matchLabels"), namespace(pdb)):
            problems.append(f"{where(pdb)}: selector matches no pods")
    for monitor in named(docs, "ServiceMonitor"):
        services = [s for s in named(docs, "Service") if namespace(s) == namespace(monitor)
                    and selects(monitor["spec"]["selector"].get("matchLabels"),
                                s["metadata"].get("labels", {}))]
        if not services:
            problems.append(f"{where(monitor)}: selector matches no Service")
        for endpoint in monitor["spec"]["endpoints"]:
            for s in services:
                if endpoint.get("port") not in {p.get("name") for p in s["spec"]["ports"]}:
                    problems.append(f"{where(monitor)}: {where(s)} has no port "
                                    f"{endpoint.get('port')}")
    for monitor in named(docs, "PodMonitor"):
        chosen = targets(monitor["spec"]["selector"].get("matchLabels"), namespace(monitor))
        if not chosen:
            problems.append(f"{where(monitor)}: selector matches no pods")
        for endpoint in monitor["spec"]["podMetricsEndpoints"]:
            for w in chosen:
                if endpoint.get("port") not in container_ports(w):
                    problems.append(f"{where(monitor)}: {where(w)} has no port "
                                    f"{endpoint.get('port')}")
    return problems


def check_scrape_jobs(docs):
    """The monitors give the job names deploy/prometheus/prometheus.yml gives (rules use them)."""
    with open(PROMETHEUS_CONFIG) as f:
        jobs = {c["job_name"]: c for c in yaml.safe_load(f)["scrape_configs"]}
    # The Prometheus Operator's job label: the value of the target's label named by jobLabel;
    # without one, a Service's name (ServiceMonitor) or "<namespace>/<name>" (PodMonitor).
    found = {}  # job -> the monitor's endpoints
    for monitor in named(docs, "ServiceMonitor"):
        label = monitor["spec"].get("jobLabel")
        for s in named(docs, "Service"):
            labels = s["metadata"].get("labels", {})
            if selects(monitor["spec"]["selector"].get("matchLabels"), labels):
                job = labels.get(label) if label else s["metadata"]["name"]
                found[job] = monitor["spec"]["endpoints"]
    for monitor in named(docs, "PodMonitor"):
        label = monitor["spec"].get("jobLabel")
        for w in workloads(docs):
            if selects(monitor["spec"]["selector"].get("matchLabels"), pod_labels(w)):
                job = pod_labels(w).get(label) if label else \
                    f'{namespace(monitor)}/{monitor["metadata"]["name"]}'
                found[job] = monitor["spec"]["podMetricsEndpoints"]
    problems = []
    for job, config in jobs.items():
        if job not in found:
            problems.append(f"no monitor gives job {job} (prometheus.yml has it)")
        elif config.get("honor_labels") and not all(e.get("honorLabels") for e in found[job]):
            problems.append(f"job {job}: honor_labels in prometheus.yml, not honorLabels here")
    return problems


def check_resources(docs):
    problems = []
    for w in workloads(docs):
        for c in containers(pod_spec(w)):
            resources = c.get("resources", {})
            missing = [f"requests.{r}" for r in ("cpu", "memory")
                       if r not in resources.get("requests", {})]
            missing += ["limits.memory"] if "memory" not in resources.get("limits", {}) else []
            if missing:
                problems.append(f"{where(w)} container {c['name']}: no {', '.join(missing)}")
    return problems


def check_images(docs):
    problems = []
    version = project_version()
    for w in workloads(docs):
        for c in containers(pod_spec(w)):
            image = c.get("image", "")
            name, _, tag = image.rpartition(":") if ":" in image.split("/")[-1] else (image, "", "")
            if "@sha256:" in image:
                continue
            if not tag or tag == "latest":
                problems.append(f"{where(w)} container {c['name']}: image {image!r} is not pinned")
            elif name.split("/")[-1].startswith("devtime-") and tag != version:
                problems.append(f"{where(w)} container {c['name']}: image {image} is not "
                                f"this tree's version {version}")
    return problems


@of_workload("DaemonSet", AGENT, "agent")
def check_agent(docs, daemonset, spec, agent):
    problems = []
    terms = spec.get("affinity", {}).get("nodeAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
    if not terms:
        problems.append("agent: no required node affinity")
    families = set()
    for term in terms:  # terms are ORed: each one must keep the agent on Trainium
        types = [v for e in term.get("matchExpressions", [])
                 if e.get("key") == INSTANCE_TYPE_LABEL and e.get("operator") == "In"
                 for v in e.get("values", [])]
        if not types or not all(re.fullmatch(r"trn\d+[a-z]*\.\d*x?large", t) for t in types):
            problems.append(f"agent: a node affinity term allows more than Trainium types: {types}")
        families.update(t.split(".")[0] for t in types)
    if not TRAINIUM_FAMILIES <= families:
        problems.append(f"agent: node affinity lacks {sorted(TRAINIUM_FAMILIES - families)}")
    if spec.get("hostNetwork") and spec.get("dnsPolicy") != "ClusterFirstWithHostNet":
        problems.append("agent: hostNetwork without dnsPolicy ClusterFirstWithHostNet "
                        "(the collector's Service name would not resolve)")
    for part in ("requests", "limits"):
        if int(agent.get("resources", {}).get(part, {}).get(NEURON_RESOURCE, 0)) < 1:
            problems.append(f"agent: no {NEURON_RESOURCE} in resources.{part}")
    # The folders of the agent's configuration live where the DaemonSet says they do.
    config = agent_config(docs, daemonset, agent)
    if config is None:
        return problems + ["agent: its --config file is not in a ConfigMap of this base"]
    for key in ("work_dir", "spool_dir", "state_dir"):
        volume, _ = mounted_from(daemonset, agent, config.get(key, ""))
        if not volume or "hostPath" not in volume:
            problems.append(f"agent: {key} {config.get(key)} is not on a hostPath volume")
    for key in ("token_file", "tls_ca"):
        volume, _ = mounted_from(daemonset, agent, config.get(key, ""))
        if not volume or "secret" not in volume:
            problems.append(f"agent: {key} {config.get(key)} is not mounted from a Secret")
    problems += check_agent_dials_tls(docs, config)
    return problems


def check_agent_dials_tls(docs, config):
    """agent.yaml's collector is the Service, on a port that reaches the TLS proxy (agents
    send their tokens only inside TLS; the collector's own port is plaintext)."""
    service = the(docs, "Service", COLLECTOR)
    found = workload_container(docs, "Deployment", COLLECTOR, "collector")
    if service is None or isinstance(found, str):
        return []  # check_kinds and check_collector say so
    plaintext = {p for port in found[2].get("ports", []) for p in (port["containerPort"],
                                                                  port.get("name"))}
    host, _, port = str(config.get("collector", "")).rpartition(":")
    dialled = [p for p in service["spec"]["ports"] if str(p["port"]) == port]
    if host.split(".")[:2] != [COLLECTOR, namespace(service)] or not dialled:
        return [f"agent: collector {config.get('collector')} is not the Service's address"]
    if dialled[0].get("targetPort", dialled[0]["port"]) in plaintext:
        return [f"agent: collector {config.get('collector')} is the collector's plaintext port"]
    return []


def agent_config(docs, daemonset, agent):
    args = agent.get("args", [])
    path = args[args.index("--config") + 1] if "--config" in args[:-1] else None
    volume, mount = mounted_from(daemonset, agent, path or "")
    if not volume or "configMap" not in volume:
        return None
    configmap = the(docs, "ConfigMap", volume["configMap"]["name"])
    key = os.path.relpath(path, mount["mountPath"])
    if configmap is None or key not in configmap.get("data", {}):
        return None
    return yaml.safe_load(configmap["data"][key])


def check_references(docs):
    """Every ConfigMap, Secret and key a pod uses is in the render (generated names included)."""
    problems = []
    have = {(d["kind"], d["metadata"]["name"]): d
            for d in docs if d["kind"] in ("ConfigMap", "Secret")}

    def need(w, kind, name, keys=()):
        obj = have.get((kind, name))
        if obj is None:
            problems.append(f"{where(w)}: uses {kind} {name}, which is not in the base")
            return
        data = secret_data(obj) if kind == "Secret" else obj.get("data", {})
        for key in keys:
            if key not in data:
                problems.append(f"{where(w)}: {kind} {name} has no key {key}")

    for w in workloads(docs):
        spec = pod_spec(w)
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for v in volumes.values():
            for kind, field, name in (("Secret", "secret", "secretName"),
                                      ("ConfigMap", "configMap", "name")):
                if field in v:
                    need(w, kind, v[field][name], [i["key"] for i in v[field].get("items", [])])
        for c in containers(spec):
            for mount in c.get("volumeMounts", []):
                if mount["name"] not in volumes:
                    problems.append(f"{where(w)} container {c['name']}: no volume {mount['name']}")
            for e in c.get("env", []):
                for kind, field in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
                    ref = e.get("valueFrom", {}).get(field)
                    if ref:
                        need(w, kind, ref["name"], [ref["key"]])
    return problems


def check_secrets_are_templates(docs):
    """The base ships no real secret: every Secret value is a marked placeholder."""
    problems = []
    for secret in named(docs, "Secret"):
        if secret.get("data"):
            problems.append(f"{where(secret)}: data (base64) instead of readable stringData")
        for key, value in secret.get("stringData", {}).items():
            if PLACEHOLDER not in value:
                problems.append(f"{where(secret)}: {key} is not a {PLACEHOLDER} placeholder")
    return problems


def check_dashboards(docs, directory=DASHBOARDS_DIR):
    problems = []
    label, value = DASHBOARD_LABEL
    labelled = [c for c in named(docs, "ConfigMap")
                if c["metadata"].get("labels", {}).get(label) == value]
    files = sorted(glob.glob(os.path.join(directory, "*.json")))
    if not files:
        problems.append(f"no dashboards in {directory}")
    for path in files:
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            content = f.read()
        holders = [c for c in labelled if c.get("data", {}).get(name) == content]
        if len(holders) != 1:
            problems.append(f"{name}: {len(holders)} ConfigMaps labelled {label}={value} hold it")
        elif len(yaml.safe_dump(holders[0]).encode()) >= MAX_APPLIED_BYTES:
            problems.append(f"{name}: its ConfigMap is too big for kubectl apply's annotation")
    return problems


def rule_ports(rule, workload):
    """The container ports (numbers) an ingress rule of a NetworkPolicy admits on `workload`;
    None when it admits every port (a rule without `ports`)."""
    if not rule.get("ports"):
        return None
    by_name = {p.get("name"): p["containerPort"] for c in containers(pod_spec(workload), init=False)
               for p in c.get("ports", [])}
    return {by_name.get(p.get("port"), p.get("port")) for p in rule["ports"]}


def check_network_policy(docs):
    """Collector pods admit traffic only on the TLS proxy's port and the metrics port: the
    plaintext gRPC port is for the kubelet's probes (from the node, always allowed) and the
    tls-proxy (the pod's loopback), so no ingress rule may admit it."""
    deployment = the(docs, "Deployment", COLLECTOR)
    if deployment is None:
        return [f"no Deployment {COLLECTOR}"]
    policies = [p for p in named(docs, "NetworkPolicy")
                if selects(p["spec"].get("podSelector", {}).get("matchLabels"),
                           pod_labels(deployment))]
    if not policies:
        return ["collector: no NetworkPolicy selects its pods"]
    plaintext = {p["containerPort"] for c in pod_spec(deployment)["containers"]
                 if c["name"] == "collector" for p in c.get("ports", []) if p.get("name") == "grpc"}
    tls = {p["containerPort"] for c in pod_spec(deployment)["containers"]
           for p in c.get("ports", []) if p.get("name") == "grpc-tls"}
    problems = []
    admitted = set()
    for policy in policies:
        if "Ingress" not in policy["spec"].get("policyTypes", ["Ingress"]):
            problems.append(f"{where(policy)}: policyTypes lacks Ingress")
        for rule in policy["spec"].get("ingress", []):
            ports = rule_ports(rule, deployment)
            if ports is None:
                problems.append(f"{where(policy)}: an ingress rule admits every port")
                continue
            if ports & plaintext:
                problems.append(f"{where(policy)}: admits the plaintext gRPC port {plaintext}")
            admitted |= ports
    if not tls or not tls <= admitted:
        problems.append(f"collector: no NetworkPolicy admits the TLS proxy's port {tls}")
    return problems


ALL_CHECKS = [check_kinds, check_collector, check_selectors, check_scrape_jobs, check_resources,
              check_images, check_agent, check_references, check_secrets_are_templates,
              check_dashboards, check_network_policy]
