"""deploy/webhook: every manifest against the Kubernetes 1.37 schemas (`kubernetes-validate`,
whose newest bundled schemas are 1.37.0), the kustomize builds made with a real kustomize
(`kubectl kustomize`), the pod template linted by numaguard itself, the config it ships."""
from __future__ import annotations

import base64
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from numaguard.lint.config import config_from_dict
from numaguard.lint.engine import lint_documents
from numaguard.webhook.decide import JUDGED
from conftest import tool

from .conftest import NUMAGUARD, make_certs

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "webhook"
K8S_VERSION = "1.37.0"
CERT_MANAGER = "cert-manager.io/v1"


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _manifests() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*.yaml") if p.name != "kustomization.yaml")


def _validate(doc: dict) -> None:
    if doc["apiVersion"] == CERT_MANAGER:      # a CRD: not in the Kubernetes schemas
        assert doc["kind"] in ("Issuer", "Certificate")
        spec = doc["spec"]
        if doc["kind"] == "Certificate":
            assert spec["secretName"] and spec["issuerRef"]["kind"] == "Issuer"
        else:
            assert ("selfSigned" in spec) != ("ca" in spec)
        return
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_the_newest_bundled_schemas_are_1_37():
    assert kubernetes_validate.latest_version() == K8S_VERSION


@pytest.mark.parametrize("path", _manifests(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_manifest_is_valid_kubernetes_1_37(path):
    docs = _docs(path)
    assert docs
    for doc in docs:
        _validate(doc)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, list[dict]]:
    """`kubectl kustomize` of the default entry point (certificates from `numaguard webhook
    certs --patch`), the cert-manager overlay and the fail-closed overlay."""
    kubectl = tool("kubectl")          # its built-in kustomize
    tree = tmp_path_factory.mktemp("deploy") / "webhook"
    shutil.copytree(DEPLOY, tree, ignore=shutil.ignore_patterns("certs"))
    make_certs(tree / "certs", "--patch", str(tree / "base" / "validatingwebhookconfiguration.yaml"))
    out = {}
    for name, where in (("default", tree), ("cert-manager", tree / "overlays" / "cert-manager"),
                        ("fail-closed", tree / "overlays" / "fail-closed")):
        run = subprocess.run([kubectl, "kustomize", str(where)], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        out[name] = [d for d in yaml.safe_load_all(run.stdout) if d]
    out["ca"] = [(tree / "certs" / "ca.crt").read_bytes()]
    return out


def _one(docs: list[dict], kind: str) -> dict:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, kind
    return found[0]


@pytest.mark.parametrize("name", ["default", "cert-manager", "fail-closed"])
def test_kustomize_builds_are_valid_and_complete(built, name):
    docs = built[name]
    for doc in docs:
        _validate(doc)
    kinds = sorted(f"{d['kind']}/{d['metadata']['name']}" for d in docs)
    expected = ["ConfigMap/numaguard-webhook-config", "Deployment/numaguard-webhook", "Namespace/numaguard",
                "NetworkPolicy/numaguard-webhook", "PodDisruptionBudget/numaguard-webhook",
                "Service/numaguard-webhook", "ServiceAccount/numaguard-webhook", "ValidatingWebhookConfiguration/numaguard"]
    if name == "default":
        expected.append("Secret/numaguard-webhook-tls")
    else:
        expected += ["Certificate/numaguard-webhook", "Certificate/numaguard-webhook-ca",
                     "Issuer/numaguard-ca", "Issuer/numaguard-selfsigned"]
    assert kinds == sorted(expected)
    hook = _one(docs, "ValidatingWebhookConfiguration")["webhooks"][0]
    assert hook["failurePolicy"] == ("Fail" if name == "fail-closed" else "Ignore")
    annotations = _one(docs, "ValidatingWebhookConfiguration")["metadata"].get("annotations", {})
    if name == "default":
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == built["ca"][0]
        assert _one(docs, "Secret")["type"] == "kubernetes.io/tls"
    else:
        assert annotations == {"cert-manager.io/inject-ca-from": "numaguard/numaguard-webhook"}
        cert = next(d for d in docs if d["kind"] == "Certificate" and d["metadata"]["name"] == "numaguard-webhook")
        assert cert["spec"]["secretName"] == "numaguard-webhook-tls"
        assert cert["spec"]["dnsNames"][2] == "numaguard-webhook.numaguard.svc"


def test_the_webhook_configuration_says_what_the_issue_asks(built):
    hook = _one(built["default"], "ValidatingWebhookConfiguration")["webhooks"][0]
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["sideEffects"] == "None"
    assert hook["timeoutSeconds"] == 5
    assert hook["clientConfig"]["service"] == {"name": "numaguard-webhook", "namespace": "numaguard",
                                               "path": "/validate", "port": 443}
    assert hook["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "numaguard"]}]
    assert [(r["apiGroups"], r["operations"], r["resources"]) for r in hook["rules"][:4]] == [
        ([""], ["CREATE"], ["pods"]),
        ([""], ["CREATE", "UPDATE"], ["podtemplates", "replicationcontrollers"]),
        (["apps"], ["CREATE", "UPDATE"], ["deployments", "replicasets", "statefulsets", "daemonsets"]),
        (["batch"], ["CREATE", "UPDATE"], ["jobs", "cronjobs"])]
    service = _one(built["default"], "Service")
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"},
                                        {"name": "probes", "port": 8444, "targetPort": "probes", "protocol": "TCP"}]


def test_the_webhook_configuration_sends_exactly_the_kinds_the_webhook_judges(built):
    """Every carrier of the built-in table (numaguard.lint.carriers), with the versions and
    operations `decide` judges, and nothing else. The resource is the kind's plural as its CRD
    names it (all of them: lower-cased kind + "s"); ClusterTrainingRuntime is cluster-scoped."""
    hook = _one(built["default"], "ValidatingWebhookConfiguration")["webhooks"][0]
    sent = {(group, version, resource, rule["scope"], tuple(rule["operations"]))
            for rule in hook["rules"] for group in rule["apiGroups"] for version in rule["apiVersions"]
            for resource in rule["resources"]}
    judged = {(group, version, kind.lower() + "s", "Cluster" if kind == "ClusterTrainingRuntime" else "Namespaced",
               tuple(sorted(operations)))
              for (group, kind), (operations, versions) in JUDGED.items() for version in versions}
    assert sent == judged
    assert len(judged) == 49


def test_the_deployment_is_hardened_and_highly_available(built):
    deploy = _one(built["default"], "Deployment")
    spec = deploy["spec"]
    pod = spec["template"]["spec"]
    container = pod["containers"][0]
    assert spec["replicas"] == 2
    assert pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0][
        "podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert container["ports"] == [{"name": "https", "containerPort": 8443, "protocol": "TCP"},
                                  {"name": "probes", "containerPort": 8444, "protocol": "TCP"}]
    assert "--port=8443" in container["args"] and "--probe-port=8444" in container["args"]
    assert container["startupProbe"]["httpGet"] == {"path": "/readyz", "port": "probes", "scheme": "HTTPS"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes", "scheme": "HTTPS"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes", "scheme": "HTTPS"}
    # A start-up may take up to 30 s (the engine's warm-up on a slow node) before liveness counts.
    assert (container["startupProbe"]["periodSeconds"], container["startupProbe"]["failureThreshold"]) == (1, 30)
    assert container["readinessProbe"]["failureThreshold"] == 2
    assert set(container["resources"]) == {"requests", "limits"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = container["securityContext"]
    assert (sc["readOnlyRootFilesystem"], sc["allowPrivilegeEscalation"], sc["capabilities"]) == (
        True, False, {"drop": ["ALL"]})
    assert pod["automountServiceAccountToken"] is False
    assert _one(built["default"], "PodDisruptionBudget")["spec"]["minAvailable"] == 1
    policy = _one(built["default"], "NetworkPolicy")["spec"]
    assert policy["policyTypes"] == ["Ingress", "Egress"] and policy["egress"] == []
    assert policy["ingress"] == [{"ports": [{"port": 8443, "protocol": "TCP"}, {"port": 8444, "protocol": "TCP"}]}]
    # No API permissions: no Role or binding anywhere.
    assert not [d for d in built["default"] if d["kind"].endswith(("Role", "RoleBinding"))]


def test_numaguard_lints_its_own_pod_template_clean():
    docs = [d for p in _manifests() for d in _docs(p)]
    for scope in ("managed", "all"):
        result = lint_documents(docs, config=config_from_dict({"scope": scope}))
        assert result.active == []
        assert (result.summary.objects, result.summary.unmanaged) == (1, 1)   # the Deployment, opted out
    # the numaguard of this interpreter's environment, whatever PATH holds
    run = subprocess.run([*NUMAGUARD, "lint", str(DEPLOY)], capture_output=True, text=True, cwd=DEPLOY)
    assert run.returncode == 0, run.stdout


def test_the_shipped_config_is_a_valid_numaguard_config():
    cm = _docs(DEPLOY / "base" / "configmap.yaml")[0]
    config = config_from_dict(yaml.safe_load(cm["data"]["config.yaml"]))
    assert (config.webhook_mode, config.webhook_namespace_modes, config.node) == (
        "enforce", {"sandbox": "warn"}, "builtin:dual-socket-ht")


def test_the_dockerfile_is_multi_stage_hashed_and_non_root():
    text = (DEPLOY / "Dockerfile").read_text()
    stages = [line for line in text.splitlines() if line.startswith("FROM ")]
    assert stages == ["FROM python:3.11-slim AS build", "FROM python:3.11-slim"]
    build, runtime = text.split("\nFROM python:3.11-slim\n")
    assert ("RUN /opt/numaguard/bin/pip install --require-hashes --only-binary=:all: -r /tmp/requirements.txt"
            in build)
    assert "COPY deploy/webhook/requirements.txt /tmp/requirements.txt" in build
    assert "RUN /opt/numaguard/bin/pip install --no-deps --no-build-isolation ." in build
    assert "COPY --from=build /opt/numaguard /opt/numaguard" in runtime
    assert "USER 65532:65532" in runtime and 'ENTRYPOINT ["numaguard"]' in runtime
    assert "EXPOSE 8443 8444" in runtime
    assert "pip install" not in runtime          # nothing is installed unhashed in the image that runs
    # The regeneration command the Dockerfile gives is the one that wrote the lock.
    lock_command = re.search(r"#    (pip-compile .*)", (DEPLOY / "requirements.txt").read_text()).group(1)
    given = " ".join(line.lstrip("# ").rstrip(" \\") for line in text.splitlines()
                     if line.startswith("#   pip-compile") or line.startswith("#     --"))
    assert sorted(given.replace("=", " ").split()) == sorted(lock_command.replace("=", " ").split())


def _lock() -> dict[str, tuple[str, list[str]]]:
    """deploy/webhook/requirements.txt: name -> (version, sha256 hashes)."""
    pins: dict[str, tuple[str, list[str]]] = {}
    for entry in re.split(r"\n(?=[a-z0-9])", (DEPLOY / "requirements.txt").read_text()):
        match = re.match(r"([a-z0-9][a-z0-9._-]*)==([^ \\\n]+)", entry)
        if match:
            pins[canonicalize_name(match.group(1))] = (match.group(2), re.findall(r"--hash=sha256:([0-9a-f]{64})", entry))
    return pins


def test_the_lock_pins_every_runtime_dependency_with_hashes():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = _lock()
    wanted = [Requirement(d) for d in project["project"]["dependencies"]]
    wanted += [Requirement(d) for d in project["build-system"]["requires"]]       # the build backend
    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is a dependency in pyproject.toml but not in the lock"
        version, hashes = pins[name]
        assert requirement.specifier.contains(version, prereleases=True), (name, version, str(requirement.specifier))
    # Every pin (the dependencies' own dependencies too) is hashed: pip --require-hashes needs all.
    assert len(pins) >= len(wanted)
    assert all(hashes for _version, hashes in pins.values()), [n for n, (_, h) in pins.items() if not h]
