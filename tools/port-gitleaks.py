#!/usr/bin/env python3
"""Port gitleaks' config/gitleaks.toml (MIT) to src/redact/gitleaks.toml.

Usage: python3 tools/port-gitleaks.py path/to/gitleaks.toml > src/redact/gitleaks.toml

Keeps, per rule: id, regex, keywords, entropy, secretGroup, the allowlists that look at the
secret or the match (regexes and stopwords), and one generated positive example (a string the
rule's regex matches whose secret passes the entropy and allowlist checks; the Rust tests check
that `redact` removes it). Rules left out are listed, with the reason, in the header.
"""
import json
import math
import random
import re
import sre_constants as C
import sre_parse
import sys
import tomllib

# Rules the port leaves out, and why (checked by `cargo test -p session-index --lib redact`).
SKIP = {
    "pkcs12-file": "matches file paths (*.p12), not text",
}


def py_pattern(rx):
    """Go RE2 syntax → Python `re` for example generation only."""
    rx = rx.replace("[[:alnum:]]", "[a-zA-Z0-9]").replace("\\z", "\\Z")
    # Python wants global flags first; a mid-pattern (?i) becomes a scoped group over the rest.
    if "(?i)" in rx[1:]:
        rx = "(?i)" + rx.replace("(?i)", "")
    return rx


PRINTABLE = [chr(c) for c in range(33, 127)]


def class_chars(items):
    negate = False
    allowed = set()
    for op, av in items:
        if op == C.NEGATE:
            negate = True
        elif op == C.LITERAL:
            allowed.add(chr(av))
        elif op == C.RANGE:
            allowed.update(chr(c) for c in range(av[0], av[1] + 1) if c < 127)
        elif op == C.CATEGORY:
            name = str(av)
            if "DIGIT" in name and "NOT" not in name:
                allowed.update("0123456789")
            elif "WORD" in name and "NOT" not in name:
                allowed.update("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
            elif "SPACE" in name and "NOT" not in name:
                allowed.add(" ")
            elif "NOT" in name:
                allowed.update("abcdefghijklmnopqrstuvwxyz")
    if negate:
        allowed = set(PRINTABLE) - allowed
    alnum = sorted(c for c in allowed if c.isalnum())
    return alnum or sorted(allowed)


def gen(tree, rnd):
    out = []
    for op, av in tree:
        if op == C.LITERAL:
            out.append(chr(av))
        elif op == C.NOT_LITERAL:
            out.append("a" if av != ord("a") else "b")
        elif op == C.ANY:
            out.append(rnd.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))
        elif op == C.IN:
            out.append(rnd.choice(class_chars(av)))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = av
            hi = 1000 if hi == C.MAXREPEAT else hi
            n = 0 if lo == 0 and hi > 1 else min(hi, max(lo, 24)) if lo > 0 else rnd.choice([0, 1])
            out.extend(gen(sub, rnd) for _ in range(n))
        elif op == C.BRANCH:
            out.append(gen(rnd.choice(av[1]) if rnd.random() < 0.3 else av[1][0], rnd))
        elif op == C.SUBPATTERN:
            out.append(gen(av[-1], rnd))
        elif op in (C.AT, C.GROUPREF):
            pass
        else:
            raise ValueError(f"cannot generate {op}")
    return "".join(out)


def entropy(s):
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in (s.count(x) for x in set(s)))


def secret_of(m, group):
    if m.re.groups == 0:
        return m.group(0)
    if group:
        return m.group(group) or ""
    return next((g for g in m.groups() if g), m.group(0))


def example(rule, allow, allow_match, stopwords, global_allow, global_stop):
    rx = re.compile(py_pattern(rule["regex"]))
    tree = sre_parse.parse(py_pattern(rule["regex"]))
    for seed in range(400):
        rnd = random.Random(seed)
        text = gen(tree, rnd)
        if rule.get("keywords") and not any(k in text.lower() for k in rule["keywords"]):
            text = f"{rule['keywords'][0]} {text}"  # the context a keyword-filtered rule needs
        m = rx.search(text)
        if not m:
            continue
        s = secret_of(m, rule.get("secretGroup", 0))
        low = s.lower()
        if rule.get("entropy") and entropy(s) <= rule["entropy"]:
            continue
        if any(re.search(py_pattern(a), s) for a in allow + global_allow):
            continue
        if any(re.search(py_pattern(a), m.group(0)) for a in allow_match):
            continue
        if any(w in low for w in stopwords + global_stop):
            continue
        if rule.get("keywords") and not any(k in text.lower() for k in rule["keywords"]):
            continue
        return text
    return None


def rust(rx):
    """RE2 → Rust regex: a `{` that opens no repetition is a literal."""
    return re.sub(r"(?<!\\)\{(?![0-9])", r"\\{", rx)


def lit(s):
    if "'''" in s or s.endswith("'") or any(ord(c) < 32 for c in s):
        return json.dumps(s)
    return "'''" + s + "'''"


def main():
    cfg = tomllib.load(open(sys.argv[1], "rb"))
    g = cfg["allowlist"]
    global_allow, global_stop = g.get("regexes", []), g.get("stopwords", [])
    out, skipped = [], dict(SKIP)
    for r in cfg["rules"]:
        if r["id"] in skipped or "regex" not in r:
            skipped.setdefault(r["id"], "no regex")
            continue
        allow, allow_match, stop, dropped = [], [], [], []
        for a in r.get("allowlists", []):
            target = a.get("regexTarget", "secret")
            if a.get("paths") or target == "line":
                dropped.append(a.get("description", target))
                continue
            (allow if target == "secret" else allow_match).extend(a.get("regexes", []))
            stop.extend(a.get("stopwords", []))
        ex = example(r, allow, allow_match, stop, global_allow, global_stop)
        if ex is None:
            skipped[r["id"]] = "no example could be generated"
            continue
        lines = ["[[rules]]", f"id = {lit(r['id'])}", f"regex = {lit(rust(r['regex']))}"]
        if r.get("keywords"):
            lines.append("keywords = [" + ", ".join(lit(k) for k in r["keywords"]) + "]")
        if r.get("entropy"):
            lines.append(f"entropy = {r['entropy']}")
        if r.get("secretGroup"):
            lines.append(f"secretGroup = {r['secretGroup']}")
        if allow:
            lines.append("allow = [" + ", ".join(lit(rust(a)) for a in allow) + "]")
        if allow_match:
            lines.append("allowMatch = [" + ", ".join(lit(rust(a)) for a in allow_match) + "]")
        if stop:
            lines.append("stopwords = [" + ", ".join(lit(w) for w in stop) + "]")
        lines.append(f"examples = [{lit(ex)}]")
        out.append("\n".join(lines))
    print("# Ported from gitleaks' config/gitleaks.toml (https://github.com/gitleaks/gitleaks),")
    print("# MIT License, Copyright (c) 2019 Zachary Rice. Generated by tools/port-gitleaks.py;")
    print("# `examples` are generated strings each rule must redact (tested in src/redact/tests.rs).")
    print(f"# Ported {len(out)} of {len(cfg['rules'])} rules. Left out:")
    for k, v in skipped.items():
        print(f"#   {k}: {v}")
    print("# Per-rule allowlists that look at file paths or whole lines are left out (no files here).")
    print()
    print("allow = [" + ",\n  ".join(lit(rust(a)) for a in global_allow) + "]")
    print("stopwords = [" + ", ".join(lit(w) for w in global_stop) + "]")
    print()
    print("\n\n".join(out))


main()
