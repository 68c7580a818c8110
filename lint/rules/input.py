"""NG0xx: problems with the input itself. The loader and the schema checks raise these; they
have no check function of their own, but they live here so that they are listed, documented
and configurable like every other rule."""
from numaguard.lint.rules.base import Rule
from numaguard.lint.model import Severity

INVALID_DOCUMENT = Rule(
    id="NG001", name="invalid-document", severity=Severity.ERROR, target="input",
    title="The file is not valid YAML/JSON as Kubernetes reads it, or a document is a bare value",
    rationale="A manifest that kubectl cannot read is never applied, and every other check is blind "
              "to it. numaguard reads YAML as kubectl does (go-yaml v2), reports the file and line and "
              "goes on with the other documents and files. A key given twice in an object: kubectl "
              "apply -f, Helm, Argo CD's plain directories and the API server keep the later value "
              "(kubernetes/kubernetes#89303), kustomize (so kubectl apply -k, Flux and Argo CD's "
              "kustomize applications) refuses the file; it is an error where a value is silently lost "
              "or a kustomization reads the file, a warning where both values are equal (the object is "
              "judged as kubectl reads it). Lists, templates and kustomize patches are skipped and "
              "counted, not reported.",
    remediation="Fix the syntax at the reported line (indentation, an unclosed quote or bracket, a "
                "tab used for indentation); keep one of a key given twice (the value you mean); a manifest "
                "document is a mapping with apiVersion and kind.")

INVALID_OBJECT = Rule(
    id="NG002", name="invalid-object", severity=Severity.ERROR, target="input",
    title="A known kind fails its schema: wrong types, unknown fields, bad quantities",
    rationale="The API server (for workloads) or the kubelet (for a KubeletConfiguration) rejects "
              "the object: wrong value types, unknown fields in a KubeletConfiguration, quantities "
              "that do not parse, option values that are not strings. A wrong type stops the other "
              "checks of that object; an unknown KubeletConfiguration field does not, because the "
              "kubelet decodes leniently (drops the field, keeps the default) and the other rules "
              "judge what it then runs with. Pods numaguard does not check at all get no NG002.",
    remediation="Correct the field named in the message to the type the Kubernetes API expects "
                "(quantities as strings like \"2\", \"500m\", \"4Gi\"; option values quoted, e.g. \"true\").")

RENDERED_LATER = Rule(
    id="NG003", name="rendered-later", severity=Severity.INFO, target="input",
    title="A value another program renders first is not judged",
    rationale="Repositories keep what a program fills in before anything reads it: clusterctl "
              "variables (`${KUBERNETES_VERSION}`), envsubst and Flux substitutions, Jinja that "
              "cloud-init renders on a Cluster API machine (`{{ ds.meta_data.instance_id }}`), Go "
              "templates. No kubelet or API server ever sees the expression, so judging it would be "
              "judging text nobody runs: the value is set aside (a kubelet flag it sets counts as "
              "unknown) and this info names the value, the program that renders it, and how to "
              "lint what it renders. Whole template files are skipped as `template` instead. The "
              "summary counts both per program (`summary.renderedLater`).",
    remediation="Lint what the program renders: `clusterctl generate cluster NAME --from FILE | "
                "numaguard lint -`, `flux build kustomization ...`, `helm template ...`; or write the "
                "value out.")
