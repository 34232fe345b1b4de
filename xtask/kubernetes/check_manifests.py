"""Checks Kubernetes manifests against the official Kubernetes Python client's models and
JobSet's CRD schema, for `cargo xtask kubernetes` (xtask/src/kubernetes/schema.rs).

Usage: python check_manifests.py JOBSET_SCHEMA MANIFEST...

Every document of every manifest is checked as the API server would with strict field
validation (`kubectl apply --validate=strict`):
- core objects (v1 Service, Secret; batch/v1 Job) are deserialized into their model
  (V1Service, ...) with the client's client-side validation (a required field missing fails),
  and the document is walked against each model's `attribute_map`/`openapi_types`, since the
  models ignore unknown keys: a misspelt or unknown field, or a value of the wrong type, fails;
- a JobSet is validated with `jsonschema` against JobSet's openAPIV3Schema (test data,
  `jobset-v1alpha2-schema.json`, whose `$comment` names its source and commit), every object
  there closed to unknown fields as the API server's strict validation closes them, and its
  metadata and each replicated job's pod template walked as V1ObjectMeta and
  V1PodTemplateSpec.
Two self-checks make sure a misspelt field does fail each way.

Prints one JSON object: {"checks": [[NAME, ERROR or null], ...], "manifests": {FILE: [DOC...]}}
with the documents as parsed, for the environment checks; exits 0 unless it could not run.
"""

import copy
import json
import os
import re
import sys

import jsonschema
import kubernetes.client
import yaml

CORE = {
    ("v1", "Service"): "V1Service",
    ("v1", "Secret"): "V1Secret",
    ("batch/v1", "Job"): "V1Job",
    ("networking.k8s.io/v1", "NetworkPolicy"): "V1NetworkPolicy",
}
JOBSET = ("jobset.x-k8s.io/v1alpha2", "JobSet")

API = kubernetes.client.ApiClient()


def model_class(name):
    return getattr(kubernetes.client.models, name)


def walk(value, type_name, path):
    """Checks `value` against the client's type `type_name` (`V1Job`, `list[V1Container]`,
    `dict(str, str)`, `str`, ...): every key known, every value of its type."""
    list_of = re.fullmatch(r"list\[(.+)\]", type_name)
    if list_of:
        if not isinstance(value, list):
            raise ValueError(f"{path}: expected a list ({type_name}), got {value!r}")
        for i, item in enumerate(value):
            walk(item, list_of.group(1), f"{path}[{i}]")
        return
    dict_of = re.fullmatch(r"dict\(str, (.+)\)", type_name)
    if dict_of:
        if not isinstance(value, dict):
            raise ValueError(f"{path}: expected a map ({type_name}), got {value!r}")
        for key, item in value.items():
            walk(item, dict_of.group(1), f"{path}.{key}")
        return
    primitive = {"str": str, "int": int, "bool": bool, "float": (int, float)}
    if type_name in primitive:
        ok = isinstance(value, primitive[type_name]) and not (
            type_name != "bool" and isinstance(value, bool)
        )
        if not ok:
            raise ValueError(f"{path}: expected {type_name}, got {value!r}")
        return
    if type_name in ("object", "datetime", "date"):
        return
    cls = model_class(type_name)
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected an object ({type_name}), got {value!r}")
    fields = {json_key: attr for attr, json_key in cls.attribute_map.items()}
    for key, item in value.items():
        if key not in fields:
            raise ValueError(
                f"{path}.{key}: no such field in {type_name} (known: {', '.join(sorted(fields))})"
            )
        walk(item, cls.openapi_types[fields[key]], f"{path}.{key}")


def check_model(doc, type_name, path):
    """Walks `doc` as `type_name`, then deserializes it into the model with client-side
    validation (which raises on a required field missing or a value out of its enum)."""
    walk(doc, type_name, path)
    # The client's own deserializer, as it reads an API server's answer.
    API._ApiClient__deserialize(copy.deepcopy(doc), type_name)


def closed(schema):
    """The schema with every object that lists its properties closed to others, as the API
    server's strict field validation treats a structural schema."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def check_jobset(doc, schema, path):
    error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(schema).iter_errors(doc))
    if error is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise ValueError(f"{path}{where}: {error.message} (JobSet's schema)")
    walk(doc.get("metadata", {}), "V1ObjectMeta", f"{path}.metadata")
    for i, rjob in enumerate(doc["spec"]["replicatedJobs"]):
        where = f"{path}.spec.replicatedJobs[{i}].template.spec.template"
        check_model(rjob["template"]["spec"]["template"], "V1PodTemplateSpec", where)


def check_doc(doc, schema, path):
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not an object")
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key == JOBSET:
        check_jobset(doc, schema, path)
    elif key in CORE:
        check_model(doc, CORE[key], path)
    else:
        raise ValueError(f"{path}: apiVersion/kind {key} is none this check knows")


def outcome(f):
    try:
        f()
        return None
    except Exception as e:  # every failure is the check's, reported by name
        return f"{type(e).__name__}: {e}"


def main():
    schema_path, manifests = sys.argv[1], sys.argv[2:]
    with open(schema_path) as f:
        schema = closed(json.load(f))
    checks, parsed = [], {}
    for manifest in manifests:
        name = os.path.basename(manifest)
        with open(manifest) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        parsed[name] = docs
        for i, doc in enumerate(docs):
            what = f"{name}: {doc.get('kind')} {doc.get('metadata', {}).get('name')}"
            checks.append([what, outcome(lambda: check_doc(doc, schema, f"{name}#{i}"))])
    # Self-checks: a field misspelt fails each way (the models alone would ignore it), where
    # the same document spelt right passes.
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "x"},
        "spec": {"template": {"spec": {"subdomain": "x", "containers": [{"name": "c"}]}}},
    }
    jobset = {
        "apiVersion": JOBSET[0],
        "kind": JOBSET[1],
        "metadata": {"name": "x"},
        "spec": {"network": {"enableDNSHostnames": True}, "replicatedJobs": []},
    }
    for what, doc, inner, field in [
        ("Job", job, job["spec"]["template"]["spec"], "subdomain"),
        ("JobSet", jobset, jobset["spec"]["network"], "enableDNSHostnames"),
    ]:
        right = outcome(lambda: check_doc(doc, schema, "self"))
        inner[field[:-1]] = inner.pop(field)
        wrong = outcome(lambda: check_doc(doc, schema, "self"))
        error = None
        if right is not None:
            error = f"spelt right, it failed: {right}"
        elif wrong is None:
            error = f"{field[:-1]} (misspelt) was accepted"
        checks.append([f"a misspelt {what} field is refused", error])
    print(json.dumps({"checks": checks, "manifests": parsed}))


if __name__ == "__main__":
    main()
