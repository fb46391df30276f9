#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layering check: every call and every #include between the product's
folders must go down the one-way order of proxy/README.md. Exit 1 and print
each arrow against the rule ("from -> to: names"); 0 with "0 arrows against
the rule" when the shape holds.

How it reads the code (no compiler, no ctags: python3 only):
- a file's non-static functions and globals are its top-level definitions
  (brace depth 0) not marked static, after comments, strings and
  preprocessor lines are blanked;
- file A depends on file B when A names a function or global that only B
  defines, or includes a header of B's folder;
- any proxy layer may include the public headers (they only declare the
  contract the layers implement); calls are judged by their definer;
- for callers outside proxy's layers (cmd/, proxy/controllers/), a name
  declared in a public header of the top (proxy/proxy.h, proxy/client.h)
  belongs to the top, wherever it is defined: that is the contract they
  call through. Inside the layers a name belongs to the file defining it.
Usage: layers.py [REPO] [--graph] (--graph also prints the allowed arrows).
"""
import os
import re
import subprocess
import sys

# Each unit and the units below it that it may use (its own is implied).
BELOW = {
    'lib': [],
    'store': ['lib'],
    'policies': ['lib'],
    'proxy/cel': ['lib'],
    'syncer': ['lib', 'store', 'policies'],
    'proxy/model': ['lib', 'policies', 'proxy/cel'],
    'proxy/patch': ['lib', 'proxy/model'],
    'proxy/validation': ['lib', 'proxy/cel', 'proxy/model'],
    'proxy/dns': ['lib', 'store', 'proxy/model'],
    'proxy/core': ['lib', 'store', 'policies', 'proxy/cel', 'proxy/model', 'proxy/patch',
                   'proxy/validation'],
    'proxy/auth': ['proxy/core'],
    'proxy/admission': ['proxy/auth'],
    'proxy/api': ['proxy/admission'],
    'proxy/aggregation': ['proxy/api'],
    'proxy': ['proxy/aggregation', 'proxy/dns'],
    # controllers are clients: the in-process client contract (proxy.h,
    # client.h) and the pure layers, never the serving ones
    'proxy/controllers': ['lib', 'store', 'proxy/cel', 'proxy/model', 'proxy/patch',
                          'proxy/validation', 'proxy@client'],
    'cmd': ['proxy/controllers', 'proxy', 'syncer'],
}
# the contract's headers and the unit each stands for
CONTRACT = {'proxy/proxy.h': 'proxy@public', 'proxy/client.h': 'proxy@client'}
PUBLIC_HEADERS = tuple(CONTRACT)
# may use anything; nothing may use them (a product file including one of
# their headers is an arrow; a call cannot link: no product target builds
# their code)
FREE = ('tests', 'bench')
# The public headers declare the contract (lifecycle, hooks, the in-process
# client) that modules of every layer implement: any proxy layer may include
# them. What it calls is still held to the rule by the file defining it.
INCLUDES_OF_PUBLIC = {'#include ' + h for h in PUBLIC_HEADERS}


def closure():
    """Each unit's full set of allowed units (transitively below)."""
    out = {}

    def walk(u, seen):
        for d in BELOW.get(u, []):
            if d not in seen:
                seen.add(d)
                walk(d.split('@')[0], seen)
        return seen

    for u in BELOW:
        out[u] = walk(u, set())
        if u in ('proxy', 'cmd'):
            out[u] |= {'proxy@public', 'proxy@client'}
    return out


def unit_of(path):
    parts = path.split('/')
    if parts[0] in FREE:
        return parts[0]
    if parts[0] == 'proxy':
        if len(parts) > 2:
            return 'proxy/' + parts[1]
        return 'proxy'
    return parts[0]


TOKEN = re.compile(r'''//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|^[ \t]*#[^\n]*(?:\\\n[^\n]*)*''',
                   re.S | re.M)
IDENT = re.compile(r'[A-Za-z_]\w*')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def blank(text):
    return TOKEN.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text)


def definitions(code, statics=False):
    """Non-static top-level function and global names of blanked code (with
    statics: the static ones too)."""
    names, depth, start, i = set(), 0, 0, 0
    init = False
    while i < len(code):
        c = code[i]
        if c == '{':
            if depth == 0:
                seg = code[start:i]
                init = '=' in seg
                if not init:
                    name = function_name(seg, statics)
                    if name:
                        names.add(name)
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0 and not init:
                start = i + 1
        elif c == ';' and depth == 0:
            name = global_name(code[start:i], statics)
            if name:
                names.add(name)
            start, init = i + 1, False
        i += 1
    return names


KEYWORDS = {'sizeof', 'return', 'if', 'while', 'for', 'switch', 'main', '_Static_assert',
            'static_assert'}
STORAGE = re.compile(r'^\s*(static|extern|typedef)\b')


def function_name(seg, statics=False):
    seg = seg.strip()
    if statics and seg.startswith('static '):
        seg = seg[len('static '):]
    if not seg.endswith(')') or STORAGE.match(seg) or '(' not in seg:
        return None
    head = seg[:seg.index('(')].split()
    if not head or re.match(r'^\s*(struct|union|enum)\s+\w+\s*$', seg):
        return None
    m = IDENT.findall(head[-1])
    return m[-1] if m else None


def global_name(seg, statics=False):
    seg = seg.strip()
    if statics and seg.startswith('static '):
        seg = seg[len('static '):]
    if not seg or STORAGE.match(seg):
        return None
    lhs = seg.split('=', 1)[0]
    if '(' in lhs:  # a prototype, or a function pointer (rare at top level)
        return None
    m = IDENT.findall(lhs.split('[', 1)[0])
    kw = {'struct', 'union', 'enum', 'const', 'unsigned', 'signed'}
    if len(m) < 2 or m[-1] in kw:
        return None
    return m[-1]


def public_names(repo):
    """Each function name the contract's headers declare -> its unit."""
    names = {}
    for h, unit in CONTRACT.items():
        p = os.path.join(repo, h)
        if os.path.exists(p):
            code = blank(open(p, encoding='utf-8').read())
            for n in re.findall(r'(\w+)\s*\(', code):
                names.setdefault(n, unit)
    return names


def source_files(repo):
    """The .c and .h files git knows (tracked or new, not ignored); every one
    under the tree when it is not a git checkout."""
    try:
        return subprocess.check_output(
            ['git', '-C', repo, 'ls-files', '--cached', '--others', '--exclude-standard',
             '*.c', '*.h'], text=True, stderr=subprocess.DEVNULL).split()
    except (OSError, subprocess.CalledProcessError):
        out = []
        for d, dirs, names in os.walk(repo):
            dirs[:] = [x for x in dirs if not x.startswith(('.', 'build'))]
            out += [os.path.relpath(os.path.join(d, n), repo) for n in names
                    if n.endswith(('.c', '.h'))]
        return out


def main(argv):
    repo = argv[1] if len(argv) > 1 and not argv[1].startswith('-') else '.'
    files = source_files(repo)
    files = [f for f in files if os.path.exists(os.path.join(repo, f))]
    text = {f: open(os.path.join(repo, f), encoding='utf-8').read() for f in files}
    code = {f: blank(t) for f, t in text.items()}
    owner = {}
    for f in files:
        if f.endswith('.c') and unit_of(f) not in FREE:
            for n in definitions(code[f]) - KEYWORDS:
                owner.setdefault(n, set()).add(f)
    owner = {n: fs.pop() for n, fs in owner.items() if len(fs) == 1}
    public = public_names(repo)
    allowed = closure()
    bad, good = {}, 0
    for f in files:
        uf = unit_of(f)
        if uf in FREE:
            continue
        targets = {}
        for inc in INCLUDE.findall(text[f]):
            ut = CONTRACT.get(inc) or unit_of(inc)
            if os.path.exists(os.path.join(repo, inc)):
                targets.setdefault(ut, set()).add('#include ' + inc)
        if f.endswith('.c'):
            own = definitions(code[f], statics=True)
            for n in set(IDENT.findall(code[f])) - own:
                g = owner.get(n)
                if g is None or g == f:
                    continue
                ut = unit_of(g)
                if n in public and (not uf.startswith('proxy/') or uf == 'proxy/controllers'):
                    ut = public[n]
                targets.setdefault(ut, set()).add(n)
        for ut, names in targets.items():
            if ut == uf or ut in allowed.get(uf, set()):
                good += 1
                continue
            if ut in CONTRACT.values() and uf.startswith('proxy') and uf != 'proxy/controllers' \
                    and names <= INCLUDES_OF_PUBLIC:
                good += 1  # the contract's declarations, implemented below
                continue
            bad.setdefault((f, ut), set()).update(names)
    for (f, ut), names in sorted(bad.items()):
        print('%s -> %s: %s' % (f, ut, ', '.join(sorted(names))))
    print('%d arrows in order, %d arrows against the rule' % (good, len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
