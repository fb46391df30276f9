#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generates proxy/model/types_gen.c from k8s-api/types-1.33.json.

The JSON file lists every Kubernetes 1.33 API message (k8s.io/api and
k8s.io/apimachinery): protobuf field numbers, names and types, JSON names,
strategic-merge patch strategies and merge keys, server-side apply list types
and map keys. This script turns it into the static tables declared in
proxy/model/types.h, so that the project builds without the shared folder. The
output is committed; run this again only when the JSON changes:

    python3 scripts/gen_types.py [path/to/types-1.33.json]

(default: ../shared/k8s-api/types-1.33.json relative to the repository).
Python standard library only; the output is deterministic.
"""

import json
import os
import sys

SPECIALS = {
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "KT_TIME",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "KT_MICROTIME",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration": "KT_DURATION",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "KT_QUANTITY",
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue": "KT_QUANTITY",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "KT_INTORSTRING",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "KT_RAWEXTENSION",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "KT_FIELDSV1",
    # apiextensions JSON (not in the 1.33 file, kept for a future one)
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON": "KT_JSON",
}

# Fields embedded with Go `json:",inline"`: their message's fields appear in
# the parent's JSON object. The JSON file does not say so; this list is from
# the Go types of k8s.io/api 1.33 (every protobuf field of an embedded struct).
INLINE = {
    ("k8s.io.api.core.v1.Probe", "handler"),
    ("k8s.io.api.core.v1.Volume", "volumeSource"),
    ("k8s.io.api.core.v1.PersistentVolumeSpec", "persistentVolumeSource"),
    ("k8s.io.api.core.v1.EphemeralContainer", "ephemeralContainerCommon"),
    ("k8s.io.api.core.v1.ConfigMapEnvSource", "localObjectReference"),
    ("k8s.io.api.core.v1.ConfigMapKeySelector", "localObjectReference"),
    ("k8s.io.api.core.v1.ConfigMapProjection", "localObjectReference"),
    ("k8s.io.api.core.v1.ConfigMapVolumeSource", "localObjectReference"),
    ("k8s.io.api.core.v1.SecretEnvSource", "localObjectReference"),
    ("k8s.io.api.core.v1.SecretKeySelector", "localObjectReference"),
    ("k8s.io.api.core.v1.SecretProjection", "localObjectReference"),
    ("k8s.io.api.admissionregistration.v1.RuleWithOperations", "rule"),
    ("k8s.io.api.admissionregistration.v1.NamedRuleWithOperations",
     "ruleWithOperations"),
    ("k8s.io.api.admissionregistration.v1alpha1.NamedRuleWithOperations",
     "ruleWithOperations"),
    ("k8s.io.api.admissionregistration.v1beta1.NamedRuleWithOperations",
     "ruleWithOperations"),
    ("k8s.io.api.networking.v1.IngressRule", "ingressRuleValue"),
    ("k8s.io.api.networking.v1beta1.IngressRule", "ingressRuleValue"),
    ("k8s.io.api.extensions.v1beta1.IngressRule", "ingressRuleValue"),
    ("k8s.io.apimachinery.pkg.runtime.Unknown", "typeMeta"),
}
for _v in ("v1alpha3", "v1beta1", "v1beta2"):
    for _m in ("DeviceAllocationConfiguration", "DeviceClaimConfiguration",
               "DeviceClassConfiguration"):
        INLINE.add(("k8s.io.api.resource.%s.%s" % (_v, _m), "deviceConfiguration"))

SCALARS = {
    "string": "KT_STRING",
    "bytes": "KT_BYTES",
    "bool": "KT_BOOL",
    "int32": "KT_INT32",
    "sint32": "KT_INT32",
    "sfixed32": "KT_INT32",
    "int64": "KT_INT64",
    "sint64": "KT_INT64",
    "sfixed64": "KT_INT64",
    "uint32": "KT_UINT32",
    "fixed32": "KT_UINT32",
    "uint64": "KT_UINT64",
    "fixed64": "KT_UINT64",
    "double": "KT_DOUBLE",
    "float": "KT_FLOAT",
    "enum": "KT_INT32",
}

LABELS = {"optional": "KT_OPTIONAL", "required": "KT_OPTIONAL",
          "repeated": "KT_REPEATED", "map": "KT_MAP"}


def c_str(s):
    if s is None:
        return "NULL"
    out = s.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + out + '"'


def ident(name):
    return "".join(c if c.isalnum() else "_" for c in name)


class Gen:
    def __init__(self, messages):
        self.messages = messages
        self.names = sorted(messages)
        self.index = {n: i for i, n in enumerate(self.names)}

    def type_ref(self, t, where):
        """(kind, message index or None) for a proto type name."""
        if t in SCALARS:
            return SCALARS[t], None
        name = t.lstrip(".")
        if name in self.index:
            return "KT_MESSAGE", self.index[name]
        # an enum-like type not described as a message: ints on the wire
        sys.stderr.write("gen_types: %s: unknown type %s, treated as int32\n"
                         % (where, t))
        return "KT_INT32", None

    def field(self, mname, f, keys_name):
        where = mname + "." + f["name"]
        label = LABELS[f["label"]]
        if f["label"] == "map":
            kind, msg = self.type_ref(f["value"], where)
            key_kind, _ = self.type_ref(f["key"], where)
        else:
            kind, msg = self.type_ref(f["type"], where)
            key_kind = "0"
        json_name = f.get("json", f["name"])
        if (mname, f["name"]) in INLINE:
            json_name = ""
        msg_ref = "&kt_gen_messages[%d]" % msg if msg is not None else "NULL"
        return ("\t{ %s, %s, %d, %s, %s, %s, %s, %s, %s, %s, %s },"
                % (c_str(f["name"]), c_str(json_name), f["n"], kind, label,
                   key_kind, msg_ref, c_str(f.get("patchStrategy")),
                   c_str(f.get("patchMergeKey")), c_str(f.get("listType")),
                   keys_name or "NULL"))

    def message_body(self, i, name, out):
        fields = self.messages[name]["fields"]
        if not fields:
            return
        rows = []
        for j, f in enumerate(fields):
            keys_name = None
            if f.get("listMapKeys"):
                keys_name = "kt_keys_%d_%d" % (i, j)
                items = ", ".join(c_str(k) for k in f["listMapKeys"])
                out.append("static const char *const %s[] = { %s, NULL };"
                           % (keys_name, items))
            rows.append(self.field(name, f, keys_name))
        out.append("/* %s */" % name)
        out.append("static const struct kt_field kt_fields_%d[] = {" % i)
        out.extend(rows)
        out.append("};")

    def render(self, source):
        n = len(self.names)
        out = [
            "/* SPDX-License-Identifier: Apache-2.0 */",
            "/*",
            " * GENERATED by scripts/gen_types.py from %s: do not edit."
            % source,
            " * Regenerate with `python3 scripts/gen_types.py [types.json]`",
            " * (default ../shared/k8s-api/types-1.33.json).",
            " *",
            " * The tables behind proxy/model/types.h: every Kubernetes 1.33 API message,",
            " * sorted by name (kt_find searches it), with its fields in",
            " * declaration order.",
            " */",
            '#include "proxy/model/types.h"',
            "",
            "const size_t kt_gen_nmessages = %d;" % n,
            "",
        ]
        for i, name in enumerate(self.names):
            self.message_body(i, name, out)
        out.append("")
        out.append("const struct kt_message kt_gen_messages[%d] = {" % n)
        for i, name in enumerate(self.names):
            fields = self.messages[name]["fields"]
            special = SPECIALS.get(name, "KT_PLAIN")
            farr = "kt_fields_%d" % i if fields else "NULL"
            out.append("\t{ %s, %s, %d, %s }," % (c_str(name), farr,
                                                   len(fields), special))
        out.append("};")
        out.append("")
        return "\n".join(out)


def main(argv):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = argv[1] if len(argv) > 1 else os.path.join(
        repo, "..", "shared", "k8s-api", "types-1.33.json")
    with open(src, encoding="utf-8") as fp:
        data = json.load(fp)
    # messages outside k8s.io/api and apimachinery (kube-aggregator's
    # apiregistration), kept in the repository in the same format
    with open(os.path.join(repo, "scripts", "types-extra.json"),
              encoding="utf-8") as fp:
        for name, msg in json.load(fp)["messages"].items():
            data["messages"].setdefault(name, msg)
    gen = Gen(data["messages"])
    for mname, fname in sorted(INLINE):
        fields = data["messages"].get(mname, {}).get("fields", [])
        if not any(f["name"] == fname for f in fields):
            sys.stderr.write("gen_types: inline %s.%s not found\n" % (mname, fname))
            return 1
    text = gen.render(os.path.basename(src))
    dst = os.path.join(repo, "proxy", "model", "types_gen.c")
    with open(dst, "w", encoding="utf-8") as fp:
        fp.write(text)
    print("gen_types: %d messages -> %s" % (len(gen.names), dst))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
