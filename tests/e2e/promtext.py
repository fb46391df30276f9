#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A strict reader of the Prometheus text exposition format 0.0.4, for the
end-to-end tests of GET /metrics (tests/e2e/t_metrics_prom.sh).

  promtext.py check < metrics.txt
      exits 1 with the reason when the text does not parse: line syntax,
      label escapes, HELP/TYPE before a family's samples, a family's lines
      together, no duplicate series, histograms whose _bucket lines are
      cumulative, end at le="+Inf" and equal _count, with _sum present.
  promtext.py get 'name{label="value",...}' < metrics.txt
      prints the sum of the samples of `name` whose labels include the
      given ones (0 when none).
"""
import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
SAMPLE = re.compile(r"^(" + NAME + r")(\{(.*)\})? (\S+)$")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def parse_labels(text):
    """Parses 'a="x",b="y\\"z"' into a dict; raises ValueError on bad input."""
    labels, i = {}, 0
    while i < len(text):
        m = re.match(LABEL + "=\"", text[i:])
        if not m:
            raise ValueError("bad label at: " + text[i:])
        key = m.group(0)[:-2]
        i += len(m.group(0))
        val = []
        while True:
            if i >= len(text):
                raise ValueError("unterminated label value")
            c = text[i]
            if c == "\\":
                nxt = text[i + 1:i + 2]
                if nxt not in ("\\", "\"", "n"):
                    raise ValueError("bad escape \\" + nxt)
                val.append("\n" if nxt == "n" else nxt)
                i += 2
            elif c == "\"":
                i += 1
                break
            elif c == "\n":
                raise ValueError("raw newline in label value")
            else:
                val.append(c)
                i += 1
        if key in labels:
            raise ValueError("label repeated: " + key)
        labels[key] = "".join(val)
        if i < len(text):
            if text[i] != ",":
                raise ValueError("expected , at: " + text[i:])
            i += 1
    return labels


def value(s):
    if s in ("+Inf", "-Inf", "NaN"):
        return float(s.replace("Inf", "inf").replace("NaN", "nan"))
    return float(s)


def family_of(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[:-len(suffix)] if name.endswith(suffix) else None
        if base and types.get(base) in ("histogram", "summary"):
            return base
    return name


def read(text):
    """Returns (types, samples [(name, labels, value)]) or raises ValueError."""
    if not text.endswith("\n"):
        raise ValueError("does not end with a line feed")
    types, helps, samples, done, current = {}, {}, [], set(), None
    for n, line in enumerate(text.split("\n")[:-1], 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not re.fullmatch(NAME, parts[2]):
                raise ValueError("line %d: bad comment: %s" % (n, line))
            table = helps if parts[1] == "HELP" else types
            if parts[2] in table:
                raise ValueError("line %d: second %s for %s" % (n, parts[1], parts[2]))
            if parts[1] == "TYPE" and parts[3] not in TYPES:
                raise ValueError("line %d: bad type %s" % (n, parts[3]))
            if parts[2] in done or (current and current != parts[2] and parts[2] in types):
                raise ValueError("line %d: %s comes after its samples" % (n, parts[2]))
            table[parts[2]] = parts[3]
            continue
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError("line %d: not a sample: %s" % (n, line))
        name, labels = m.group(1), parse_labels(m.group(3) or "")
        fam = family_of(name, types)
        if fam not in types or fam not in helps:
            raise ValueError("line %d: %s has no HELP and TYPE before it" % (n, fam))
        if fam != current:
            if fam in done:
                raise ValueError("line %d: family %s is split" % (n, fam))
            if current:
                done.add(current)
            current = fam
        samples.append((name, labels, value(m.group(4))))
    return types, samples


def check_histograms(types, samples):
    seen, groups = set(), {}
    for name, labels, v in samples:
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            raise ValueError("duplicate series %s%s" % key)
        seen.add(key)
        fam = family_of(name, types)
        if types.get(fam) != "histogram":
            continue
        rest = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
        g = groups.setdefault((fam, rest), {"buckets": [], "sum": None, "count": None})
        if name.endswith("_bucket"):
            g["buckets"].append((value(labels["le"]), v))
        elif name.endswith("_sum"):
            g["sum"] = v
        else:
            g["count"] = v
    for (fam, rest), g in groups.items():
        b = g["buckets"]
        if not b or b[-1][0] != math.inf:
            raise ValueError("%s%s: no le=\"+Inf\" bucket last" % (fam, rest))
        if any(b[i][0] >= b[i + 1][0] or b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
            raise ValueError("%s%s: buckets not increasing and cumulative" % (fam, rest))
        if g["count"] != b[-1][1] or g["sum"] is None:
            raise ValueError("%s%s: _count differs from +Inf or no _sum" % (fam, rest))


def main():
    text = sys.stdin.read()
    try:
        types, samples = read(text)
        if sys.argv[1] == "check":
            check_histograms(types, samples)
            print("ok: %d families, %d samples" % (len(types), len(samples)))
            return 0
        m = re.match(r"^(" + NAME + r")(\{(.*)\})?$", sys.argv[2])
        want_name, want = m.group(1), parse_labels(m.group(3) or "")
        total = sum(v for name, labels, v in samples
                    if name == want_name and all(labels.get(k) == x for k, x in want.items()))
        print(int(total) if total == int(total) else total)
        return 0
    except ValueError as e:
        print("invalid exposition: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
