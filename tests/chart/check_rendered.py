#!/usr/bin/python3
"""Structural checks on the chart's rendered manifests, beyond what the Kubernetes schemas catch.

usage: check_rendered.py CHART_DIR VALUES_FILE RENDERED_FILE

The values are the chart's values.yaml with VALUES_FILE merged over it, as Helm merges them. Each
failed check prints one line; the exit status is 1 if any failed. Checked:
  - selectors (workloads, Services, PDBs, NetworkPolicies, monitors) select the pods they mean to;
  - every port a probe, a Service, a NetworkPolicy or a monitor names exists on those pods;
  - the coordinator address the trainers get resolves to the coordinator Service and its gRPC port;
  - the store list the coordinator gets names every shard through the headless Service;
  - scaling values (trainer.replicas, store.shards) reach the workloads and the flags;
  - GPU settings (limits, tolerations, node selector) appear exactly when trainer.gpu.enabled;
  - trainers advertise their Peer service as <pod IP>:<peer port>, reachable only from the release;
  - standard labels, non-root security contexts, volumes, service accounts and monitoring toggles;
  - limits and round settings reach the flags of the same name, and a shard's pull wait stays
    below its stream idle timeout (the store refuses to start otherwise);
  - a custom trainer (trainer.custom) gets its volumes and mounts, a startupProbe as long as
    startupGraceSeconds, its own resources, SYNCOPATE_MODEL_DIR on a writable mount of its own, and
    with runToCompletion runs as an Indexed Job (no StatefulSet) whose pod index is its rank and
    the suffix of a name that does not depend on the pod's.
"""
import json
import re
import sys

import yaml

problems = []


def seconds(duration):
    """Seconds in a duration as the chart's schema allows them ("1m30s", "500ms", "0s")."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3}
    parts = re.findall(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)", duration)
    if not parts or "".join(n + u for n, u in parts) != duration:
        raise ValueError(f"not a duration: {duration!r}")
    return sum(float(n) * units[u] for n, u in parts)


def check(condition, message):
    if not condition:
        problems.append(message)
    return condition


def merge(base, override):
    """Helm's value merge: maps merge recursively, everything else is replaced."""
    out = dict(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def name_of(obj):
    return f"{obj['kind']}/{obj['metadata']['name']}"


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def pod_template(obj):
    return obj["spec"]["template"]


def containers(template):
    return template["spec"].get("containers", [])


def container_ports(template):
    """{name: number} and the set of numbers of every container port of a pod template."""
    named, numbers = {}, set()
    for c in containers(template):
        for p in c.get("ports", []):
            numbers.add(p["containerPort"])
            if "name" in p:
                named[p["name"]] = p["containerPort"]
    return named, numbers


def resolves(port, template):
    named, numbers = container_ports(template)
    return port in named if isinstance(port, str) else port in numbers


def args_of(template, container_name):
    for c in containers(template):
        if c["name"] == container_name:
            return {a.split("=", 1)[0]: a.split("=", 1)[1] for a in c.get("args", []) if "=" in a}
    return None


# A custom trainer (trainer.custom.image) gets through SYNCOPATE_* variables what the built-in one
# gets as flags.
CUSTOM_TRAINER_ENV = {"SYNCOPATE_COORDINATOR": "--coordinator", "SYNCOPATE_PEER_ADDRESS": "--peer-address",
                      "SYNCOPATE_PEER_LISTEN": "--peer-listen", "SYNCOPATE_DEVICE": "--device",
                      "SYNCOPATE_NAME": "--name"}


def run_to_completion(custom):
    """The trainers are an Indexed Job, not a StatefulSet."""
    return bool(custom["image"] and custom["runToCompletion"])


def trainer_settings(template, custom):
    """The trainer's coordinator, peer addresses, device and name, from its flags or its environment."""
    if not custom["image"]:
        return args_of(template, "trainer")
    container = [c for c in containers(template) if c["name"] == "trainer"][0]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    check(container["image"] == custom["image"], f"the trainer runs {container['image']}, not {custom['image']}")
    check(container.get("command", []) == custom["command"], "the trainer's command is not trainer.custom.command")
    check(container.get("args", []) == custom["args"], "the trainer's args are not trainer.custom.args")
    for extra in custom["env"]:
        check(env.get(extra["name"]) == extra.get("value"), f"{extra['name']} from trainer.custom.env is missing")
    if not run_to_completion(custom):
        for name in ("SYNCOPATE_NAME", "SYNCOPATE_RANK"):
            check(env.get(name, "").startswith("$(POD_"), f"{name} is not the pod's identity")
    mounts = container.get("volumeMounts", [])
    check("/tmp" in {m["mountPath"] for m in mounts},
          "a custom trainer has no writable /tmp on its read-only root")
    # Its own volumes and mounts, as given, beside the chart's.
    volumes = template["spec"].get("volumes", [])
    for volume in custom["volumes"]:
        check(volume in volumes, f"trainer.custom.volumes {volume['name']} is not a volume of the trainer pods")
    for mount in custom["volumeMounts"]:
        check(mount in mounts, f"trainer.custom.volumeMounts {mount['mountPath']} is not mounted")
    names = [v["name"] for v in volumes]
    check(len(names) == len(set(names)), f"the trainer pods have two volumes of one name: {names}")
    paths = [m["mountPath"] for m in mounts]
    check(len(paths) == len(set(paths)), f"the trainer mounts two volumes on one path: {paths}")
    # The final model goes to a writable volume of the user's; SYNCOPATE_MODEL_DIR names it.
    model_dir = custom["modelDir"]
    check(env.get("SYNCOPATE_MODEL_DIR") == (model_dir or None),
          f"SYNCOPATE_MODEL_DIR is {env.get('SYNCOPATE_MODEL_DIR')}, not trainer.custom.modelDir {model_dir!r}")
    if model_dir:
        check(any(not m.get("readOnly") and (model_dir + "/").startswith(m["mountPath"].rstrip("/") + "/")
                  for m in custom["volumeMounts"]),
              f"trainer.custom.modelDir {model_dir} is on no writable volume of trainer.custom.volumeMounts")
    # A slow start has startupGraceSeconds before the liveness probe counts, on the same endpoint.
    grace = custom["startupGraceSeconds"]
    startup, liveness = container.get("startupProbe"), container.get("livenessProbe")
    if grace:
        if check(startup, "a custom trainer has no startupProbe"):
            allowed = startup["periodSeconds"] * startup["failureThreshold"]
            check(grace <= allowed < grace + startup["periodSeconds"],
                  f"the startupProbe allows {allowed} s, not trainer.custom.startupGraceSeconds {grace}")
            check(startup.get("httpGet") == liveness.get("httpGet"),
                  "the startupProbe does not probe the liveness probe's endpoint")
    else:
        check(not startup, "a startupProbe with trainer.custom.startupGraceSeconds 0")
    return {flag: env.get(name, "") for name, flag in CUSTOM_TRAINER_ENV.items()}


def check_trainer_job(job, trainer_values, services):
    """An Indexed Job of trainer.replicas trainers that are not restarted once they exit 0, whose pod
    index is the trainer's rank and the suffix of its name, with host names in the headless Service."""
    spec, custom = job["spec"], trainer_values["custom"]
    replicas = trainer_values["replicas"]
    check(spec.get("completionMode") == "Indexed", f"{name_of(job)} is not an Indexed Job")
    check(spec.get("completions") == replicas and spec.get("parallelism") == replicas,
          f"{name_of(job)}: completions {spec.get('completions')} and parallelism "
          f"{spec.get('parallelism')} are not trainer.replicas {replicas}")
    check(spec.get("backoffLimit") == custom["backoffLimit"],
          f"{name_of(job)}: backoffLimit is not trainer.custom.backoffLimit")
    check("selector" not in spec and not spec.get("manualSelector"),
          f"{name_of(job)} sets its own selector (the Job controller makes one)")
    pod = pod_template(job)["spec"]
    check(pod.get("restartPolicy") == "OnFailure",
          f"{name_of(job)}: restartPolicy {pod.get('restartPolicy')}: a trainer that exits 0 must stay done")
    headless = [s for s in services if s["metadata"]["name"] == pod.get("subdomain")]
    check(headless and headless[0]["spec"].get("clusterIP") == "None" and
          selects(headless[0]["spec"]["selector"], pod_template(job)["metadata"]["labels"]),
          f"{name_of(job)}: subdomain {pod.get('subdomain')} is not the trainers' headless Service")
    container = [c for c in containers(pod_template(job)) if c["name"] == "trainer"][0]
    env = {e["name"]: e for e in container.get("env", [])}
    order = [e["name"] for e in container.get("env", [])]
    index = env.get("JOB_COMPLETION_INDEX", {}).get("valueFrom", {}).get("fieldRef", {})
    check(index.get("fieldPath") == "metadata.annotations['batch.kubernetes.io/job-completion-index']",
          "JOB_COMPLETION_INDEX is not the pod's completion index")
    check(env.get("SYNCOPATE_RANK", {}).get("value") == "$(JOB_COMPLETION_INDEX)",
          "a Job's trainer's rank is not its completion index")
    name = f"{job['metadata']['name']}-$(JOB_COMPLETION_INDEX)"
    check(env.get("SYNCOPATE_NAME", {}).get("value") == name,
          f"a Job's trainer is named {env.get('SYNCOPATE_NAME', {}).get('value')}, not {name}: "
          "not a stable name (a Job's pod names are random)")
    for var in ("SYNCOPATE_RANK", "SYNCOPATE_NAME", "POD_INDEX"):
        check(var not in order or ("JOB_COMPLETION_INDEX" in order and
                                   order.index("JOB_COMPLETION_INDEX") < order.index(var)),
              f"{var} refers to JOB_COMPLETION_INDEX before it is defined")


def main(chart_dir, values_file, rendered_file):
    with open(f"{chart_dir}/values.yaml") as f:
        values = yaml.safe_load(f)
    with open(values_file) as f:
        values = merge(values, yaml.safe_load(f))
    with open(rendered_file) as f:
        objects = [o for o in yaml.safe_load_all(f) if o]
    check(objects, "nothing was rendered")

    by_kind = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    workloads = by_kind.get("Deployment", []) + by_kind.get("StatefulSet", []) + by_kind.get("Job", [])
    services = by_kind.get("Service", [])

    def workloads_selected_by(selector):
        return [w for w in workloads if selects(selector, pod_template(w)["metadata"]["labels"])]

    def component(comp):
        found = [w for w in workloads
                 if w["metadata"]["labels"].get("app.kubernetes.io/component") == comp]
        check(len(found) == 1, f"expected one {comp} workload, found {len(found)}")
        return found[0] if found else None

    # Labels on every object.
    for obj in objects:
        labels = obj["metadata"].get("labels", {})
        for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance",
                    "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"):
            check(key in labels, f"{name_of(obj)} lacks label {key}")

    # Workloads: selectors match their pods; probes name real ports; security; volumes.
    accounts = {a["metadata"]["name"] for a in by_kind.get("ServiceAccount", [])}
    for w in workloads:
        template = pod_template(w)
        # A Job's selector is the Job controller's (its uid); the component's labels stand for it.
        selector = (w["spec"]["selector"]["matchLabels"] if w["kind"] != "Job" else
                    {k: v for k, v in template["metadata"]["labels"].items()
                     if k in ("app.kubernetes.io/name", "app.kubernetes.io/instance",
                              "app.kubernetes.io/component")})
        check(selects(selector, template["metadata"]["labels"]),
              f"{name_of(w)}: selector does not match its pod labels")
        check(len(workloads_selected_by(selector)) == 1,
              f"{name_of(w)}: its selector also matches another workload's pods")
        spec = template["spec"]
        check(spec.get("serviceAccountName") in accounts,
              f"{name_of(w)}: service account {spec.get('serviceAccountName')} is not rendered")
        check(spec.get("securityContext", {}).get("runAsNonRoot") is True,
              f"{name_of(w)}: pods may run as root")
        volumes = {v["name"] for v in spec.get("volumes", [])}
        volumes |= {t["metadata"]["name"] for t in w["spec"].get("volumeClaimTemplates", [])}
        for c in containers(template):
            sc = c.get("securityContext", {})
            check(sc.get("allowPrivilegeEscalation") is False and
                  sc.get("readOnlyRootFilesystem") is True,
                  f"{name_of(w)}/{c['name']}: security context is not locked down")
            check("resources" in c, f"{name_of(w)}/{c['name']}: no resources")
            for probe_kind in ("startupProbe", "readinessProbe", "livenessProbe"):
                probe = c.get(probe_kind)
                if not probe:
                    continue
                port = (probe.get("grpc") or probe.get("httpGet") or probe.get("tcpSocket"))["port"]
                check(resolves(port, template),
                      f"{name_of(w)}/{c['name']}: {probe_kind} port {port} is not a container port")
            for mount in c.get("volumeMounts", []):
                check(mount["name"] in volumes,
                      f"{name_of(w)}/{c['name']}: mounts unknown volume {mount['name']}")
        if w["kind"] == "StatefulSet":
            governing = [s for s in services if s["metadata"]["name"] == w["spec"]["serviceName"]]
            check(governing and governing[0]["spec"].get("clusterIP") == "None",
                  f"{name_of(w)}: serviceName {w['spec']['serviceName']} is not a headless Service")

    # Services select pods that have every port they forward to.
    service_ports = {}
    for s in services:
        selected = workloads_selected_by(s["spec"]["selector"])
        check(len(selected) == 1, f"{name_of(s)} selects {len(selected)} workloads, not 1")
        for p in s["spec"]["ports"]:
            service_ports.setdefault(s["metadata"]["name"], {})[p["name"]] = p
            for w in selected:
                check(resolves(p["targetPort"], pod_template(w)),
                      f"{name_of(s)}: targetPort {p['targetPort']} is not a port of {name_of(w)}")

    # PodDisruptionBudgets and NetworkPolicies select one workload each, by ports it has.
    for pdb in by_kind.get("PodDisruptionBudget", []):
        selected = workloads_selected_by(pdb["spec"]["selector"]["matchLabels"])
        check(len(selected) == 1, f"{name_of(pdb)} does not select exactly one workload")
        check(pdb["spec"].get("maxUnavailable") not in (0, "0", "0%"),
              f"{name_of(pdb)}: maxUnavailable 0 blocks every node drain")
        for w in selected:
            if w["kind"] != "Job":
                continue
            # A Job has no scale subresource: only an integer minAvailable works for its pods.
            available = pdb["spec"].get("minAvailable")
            if check("maxUnavailable" not in pdb["spec"] and isinstance(available, int),
                     f"{name_of(pdb)}: a budget of {name_of(w)}'s pods must be an integer minAvailable"):
                check(available == 0 or available < w["spec"]["parallelism"],
                      f"{name_of(pdb)}: minAvailable {available} blocks every node drain")
    for policy in by_kind.get("NetworkPolicy", []):
        selected = workloads_selected_by(policy["spec"]["podSelector"]["matchLabels"])
        check(len(selected) == 1, f"{name_of(policy)} does not select exactly one workload")
        for rule in policy["spec"].get("ingress", []):
            for p in rule.get("ports", []):
                for w in selected:
                    check(resolves(p["port"], pod_template(w)),
                          f"{name_of(policy)}: port {p['port']} is not a port of {name_of(w)}")

    # Monitors select Services/pods with a `metrics` port; they exist only when enabled.
    for monitor in by_kind.get("ServiceMonitor", []):
        selected = [s for s in services
                    if selects(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])]
        check(len(selected) == 1, f"{name_of(monitor)} selects {len(selected)} Services, not 1")
        for endpoint in monitor["spec"]["endpoints"]:
            for s in selected:
                check(endpoint["port"] in service_ports[s["metadata"]["name"]],
                      f"{name_of(monitor)}: {name_of(s)} has no port {endpoint['port']}")
    for monitor in by_kind.get("PodMonitor", []):
        selected = workloads_selected_by(monitor["spec"]["selector"]["matchLabels"])
        check(len(selected) == 1, f"{name_of(monitor)} does not select exactly one workload")
        for endpoint in monitor["spec"]["podMetricsEndpoints"]:
            for w in selected:
                check(resolves(endpoint["port"], pod_template(w)),
                      f"{name_of(monitor)}: port {endpoint['port']} is not a port of {name_of(w)}")
    # A Job's trainer pods have random names: their instance is <job>-<completion index>, the name
    # they join under.
    jobs = by_kind.get("Job", [])
    for monitor in by_kind.get("ServiceMonitor", []) + by_kind.get("PodMonitor", []):
        if monitor["metadata"]["labels"].get("app.kubernetes.io/component") != "trainer" or not jobs:
            continue
        for endpoint in monitor["spec"].get("endpoints", []) + monitor["spec"].get("podMetricsEndpoints", []):
            instance = [r for r in endpoint.get("relabelings", []) if r.get("targetLabel") == "instance"]
            check(instance and instance[-1].get("sourceLabels") ==
                  ["__meta_kubernetes_pod_controller_name",
                   "__meta_kubernetes_pod_annotation_batch_kubernetes_io_job_completion_index"] and
                  instance[-1].get("replacement") == "${1}-${2}",
                  f"{name_of(monitor)}: a Job's trainer's instance is its random pod name, not its name")
    metrics = values["metrics"]
    for kind, enabled, count in (("ServiceMonitor", metrics["serviceMonitor"]["enabled"], 3),
                                 ("PodMonitor", metrics["podMonitor"]["enabled"], 3),
                                 ("PrometheusRule", metrics["prometheusRule"]["enabled"], 1)):
        check(len(by_kind.get(kind, [])) == (count if enabled else 0),
              f"{kind}: {len(by_kind.get(kind, []))} rendered with enabled={enabled}")
    for rule in by_kind.get("PrometheusRule", []):
        check([g for g in rule["spec"]["groups"] if g.get("rules")],
              f"{name_of(rule)} has no rules")
    dashboards = [c for c in by_kind.get("ConfigMap", [])
                  if values["dashboards"]["label"] in c["metadata"]["labels"]]
    check(len(dashboards) == (2 if values["dashboards"]["enabled"] else 0),
          f"{len(dashboards)} dashboard ConfigMaps with dashboards.enabled="
          f"{values['dashboards']['enabled']}")
    for c in dashboards:
        for key, text in c["data"].items():
            board = json.loads(text)
            check(board.get("uid") == key.removesuffix(".json"),
                  f"{name_of(c)}: {key} has uid {board.get('uid')}")

    coordinator, store, trainer = component("coordinator"), component("store"), component("trainer")
    if not (coordinator and store and trainer):
        return

    # The trainers are an Indexed Job exactly with trainer.custom.runToCompletion (and an image).
    custom = values["trainer"]["custom"]
    expected = "Job" if run_to_completion(custom) else "StatefulSet"
    check(trainer["kind"] == expected, f"the trainers are a {trainer['kind']}, not a {expected}")
    check(len(by_kind.get("Job", [])) == (1 if expected == "Job" else 0),
          f"{len(by_kind.get('Job', []))} Jobs rendered with runToCompletion={custom['runToCompletion']}")
    if trainer["kind"] == "Job":
        check_trainer_job(trainer, values["trainer"], services)

    # The trainer's resources: trainer.custom.resources for a custom trainer that sets them, else
    # trainer.resources; GPUs (below) added to either.
    given = custom["resources"] if custom["image"] and custom["resources"] else values["trainer"]["resources"]
    actual = containers(pod_template(trainer))[0]["resources"]
    for kind in ("requests", "limits"):
        got = {k: v for k, v in actual.get(kind, {}).items() if k != "nvidia.com/gpu"}
        check(got == given.get(kind, {}), f"trainer {kind} {got} are not {given.get(kind, {})}")

    # The coordinator address the trainers get is the coordinator Service's gRPC port.
    trainer_args = trainer_settings(pod_template(trainer), values["trainer"]["custom"])
    host, _, port = trainer_args["--coordinator"].rpartition(":")
    target = [s for s in services if s["metadata"]["name"] == host]
    if check(target, f"trainers dial {host}, which is no Service"):
        service = target[0]
        check(selects(service["spec"]["selector"], pod_template(coordinator)["metadata"]["labels"]),
              f"Service {host} does not select the coordinator")
        forwarded = [p for p in service["spec"]["ports"] if p["port"] == int(port)]
        if check(forwarded, f"Service {host} has no port {port}"):
            named, _ = container_ports(pod_template(coordinator))
            listen = args_of(pod_template(coordinator), "coordinator")["--listen"]
            check(named.get(forwarded[0]["targetPort"]) == int(listen.rpartition(":")[2]),
                  f"Service {host}:{port} does not reach the coordinator's --listen {listen}")

    # The store list names shard i as <statefulset>-i.<headless service>.<ns>.svc.<domain>:<port>.
    shards = values["store"]["shards"]
    stores = args_of(pod_template(coordinator), "coordinator")["--stores"].split(",")
    check(len(stores) == shards, f"--stores has {len(stores)} entries for {shards} shards")
    store_name, headless = store["metadata"]["name"], store["spec"]["serviceName"]
    namespace = store["metadata"]["namespace"]
    domain = values["global"]["clusterDomain"]
    store_port = container_ports(pod_template(store))[0]["grpc"]
    for i, address in enumerate(stores):
        check(address == f"{store_name}-{i}.{headless}.{namespace}.svc.{domain}:{store_port}",
              f"store {i} address {address} is not shard {i} through {headless}")

    # Scaling values reach the workloads and the flags.
    check(store["spec"]["replicas"] == shards, "store replicas differ from store.shards")
    check(args_of(pod_template(store), "store")["--shard-count"] == str(shards),
          "--shard-count differs from store.shards")
    check(args_of(pod_template(store), "store")["--shard"] == "$(POD_INDEX)",
          "the store's shard is not its ordinal")
    replicas = values["trainer"]["replicas"]
    check(trainer["spec"].get("replicas", trainer["spec"].get("parallelism")) == replicas,
          "trainer replicas differ from trainer.replicas")
    min_trainers = values["sync"]["minTrainers"] or replicas
    check(args_of(pod_template(coordinator), "coordinator")["--min-trainers"] == str(min_trainers),
          "--min-trainers differs from sync.minTrainers (default trainer.replicas)")
    check(args_of(pod_template(coordinator), "coordinator")["--mode"] == values["sync"]["mode"],
          "--mode differs from sync.mode")
    check(coordinator["spec"]["replicas"] == 1, "more than one coordinator")
    for w in (store, trainer):
        if w["kind"] == "Job":
            continue  # its index is the completion index (check_trainer_job)
        env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
               for c in containers(pod_template(w)) for e in c.get("env", [])}
        check(env.get("POD_INDEX") == "metadata.labels['apps.kubernetes.io/pod-index']",
              f"{name_of(w)}: POD_INDEX is not the pod's ordinal")

    # Trainers advertise their Peer service at the pod's IP and their peer container port, and only
    # the release's pods may reach it.
    peer_port = container_ports(pod_template(trainer))[0].get("peer")
    check(peer_port == values["trainer"]["peerPort"], "the trainer has no peer port")
    check(trainer_args.get("--peer-address") == f"$(POD_IP):{peer_port}",
          f"trainers advertise {trainer_args.get('--peer-address')}, not $(POD_IP):{peer_port}")
    check(trainer_args.get("--peer-listen", "").endswith(f":{peer_port}"),
          "the Peer service does not listen on the peer port")
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
           for c in containers(pod_template(trainer)) for e in c.get("env", [])}
    check(env.get("POD_IP") == "status.podIP", "POD_IP is not the pod's IP")
    for policy in by_kind.get("NetworkPolicy", []):
        if selects(policy["spec"]["podSelector"]["matchLabels"],
                   pod_template(trainer)["metadata"]["labels"]):
            peer_rules = [r for r in policy["spec"]["ingress"]
                          if any(p["port"] == "peer" for p in r.get("ports", []))]
            check(peer_rules and all(r.get("from") for r in peer_rules),
                  f"{name_of(policy)} leaves the peer port open to everyone")

    # GPU settings appear exactly when enabled.
    gpu = values["trainer"]["gpu"]
    spec = pod_template(trainer)["spec"]
    limits = containers(pod_template(trainer))[0]["resources"].get("limits", {})
    device = trainer_args["--device"]
    if gpu["enabled"]:
        check(limits.get("nvidia.com/gpu") == gpu["count"], "trainer GPU limit missing")
        check(all(t in spec.get("tolerations", []) for t in gpu["tolerations"]),
              "GPU tolerations missing")
        check(selects(gpu["nodeSelector"], spec.get("nodeSelector", {})), "GPU nodeSelector missing")
        check(device == "auto", f"--device={device} with GPUs")
    else:
        check("nvidia.com/gpu" not in limits, "CPU-only trainers request GPUs")
        check(not any(t.get("key") == "nvidia.com/gpu" for t in spec.get("tolerations", [])),
              "CPU-only trainers tolerate the GPU taint")
        check(device == "cpu", f"--device={device} on CPU-only trainers")

    # Persistence: one claim per shard, or an emptyDir.
    claims = store["spec"].get("volumeClaimTemplates", [])
    check(bool(claims) == values["store"]["persistence"]["enabled"],
          "store volumeClaimTemplates do not follow store.persistence.enabled")

    # Certificates: with TLS on every process reads /etc/syncopate/tls. A trainer's own certificate
    # (perPod) must name the pod, which is the name the trainer joins under.
    tls = values["tls"]
    per_pod = tls["trainerCertificates"] == "perPod"
    for w, comp in ((coordinator, "coordinator"), (store, "store"), (trainer, "trainer")):
        template = pod_template(w)
        container = [c for c in containers(template) if c["name"] == comp][0]
        mounted = [m["name"] for m in container.get("volumeMounts", [])
                   if m["mountPath"] == "/etc/syncopate/tls"]
        check(bool(mounted) == tls["enabled"],
              f"{name_of(w)}: the certificate mount does not follow tls.enabled")
        volumes = {v["name"]: v for v in template["spec"].get("volumes", [])}
        for volume in (volumes.get(name, {}) for name in mounted):
            if comp == "trainer" and per_pod:
                csi = volume.get("csi", {})
                attributes = csi.get("volumeAttributes", {})
                uri = f"spiffe://{tls['csi']['trustDomain']}/syncopate/trainer/${{POD_NAME}}"
                check(csi.get("driver") == "csi.cert-manager.io",
                      "per-pod trainer certificates do not come from cert-manager's csi-driver")
                check(attributes.get("csi.cert-manager.io/uri-sans") == uri,
                      f"a trainer's certificate names {attributes.get('csi.cert-manager.io/uri-sans')}, "
                      f"not {uri}")
                check(attributes.get("csi.cert-manager.io/issuer-name") == tls["csi"]["issuerName"],
                      "per-pod certificates are not signed by tls.csi.issuerName")
                for key, name in (("ca-file", "ca.crt"), ("certificate-file", "tls.crt"),
                                  ("privatekey-file", "tls.key")):
                    check(attributes.get(f"csi.cert-manager.io/{key}") == name,
                          f"the per-pod certificate's {key} is not {name}")
                check(trainer_args.get("--name") == "$(POD_NAME)",
                      "a trainer's certificate names its pod, but it joins under another name")
            else:
                check("secret" in volume, f"{name_of(w)}: its certificate is not from a Secret")

    # Limits reach the flags of the same name.
    limits = values["limits"]
    for w, comp in ((coordinator, "coordinator"), (store, "store")):
        args = args_of(pod_template(w), comp)
        check(args.get("--max-message-bytes") == str(limits["maxMessageBytes"]),
              f"{comp}: --max-message-bytes differs from limits.maxMessageBytes")
        check(args.get("--max-streams-per-connection") == str(limits["maxStreamsPerConnection"]),
              f"{comp}: --max-streams-per-connection differs from limits.maxStreamsPerConnection")
    for w, comp, flag, key in ((store, "store", "--stream-idle-timeout", "streamIdleTimeout"),
                               (store, "store", "--release-memory-every", "releaseMemoryEvery"),
                               (coordinator, "coordinator", "--join-timeout", "joinTimeout"),
                               (coordinator, "coordinator", "--departed-statuses-kept",
                                "departedStatusesKept")):
        check(args_of(pod_template(w), comp).get(flag) == str(limits[key]),
              f"{comp}: {flag} differs from limits.{key}")
    store_args = args_of(pod_template(store), "store")
    check(store_args.get("--pull-wait") == str(values["store"]["pullWait"]),
          "store: --pull-wait differs from store.pullWait")
    idle = seconds(store_args["--stream-idle-timeout"])
    check(idle == 0 or idle > seconds(store_args["--pull-wait"]),
          "store: --stream-idle-timeout must exceed --pull-wait (the store refuses to start)")
    check(args_of(pod_template(coordinator), "coordinator").get("--pipeline-grants") ==
          str(values["sync"]["pipelineGrants"]).lower(),
          "coordinator: --pipeline-grants differs from sync.pipelineGrants")
    if not values["trainer"]["custom"]["image"]:
        for flag, key in (("--peer-stream-idle-timeout", "peerStreamIdleTimeout"),
                          ("--peer-inbox-per-sender", "peerInboxPerSender"),
                          ("--peer-inbox-models", "peerInboxModels")):
            check(trainer_args.get(flag) == str(limits[key]), f"trainer: {flag} differs from limits.{key}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
    for p in problems:
        print(f"{sys.argv[3]}: {p}")
    sys.exit(1 if problems else 0)
