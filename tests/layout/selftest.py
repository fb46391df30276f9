#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layering check catches what it is for: in small trees made here, an
upward call, an upward #include and a call of the client contract from a
layer below the API each fail it; calls down, an include of the public
header and a static namesake pass. Exit 0 when every case holds."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, 'layers.py')

BASE = {
    'proxy/model/m.c': 'int model_fn(void) { return 1; }\n',
    'proxy/api/a.c': '#include "proxy/model/m.h"\nint api_fn(void) { return model_fn(); }\n',
    'proxy/model/m.h': 'int model_fn(void);\n',
    'proxy/proxy.h': '#include "proxy/client.h"\nint proxy_start(void);\n',
    'proxy/client.h': 'int proxy_object_get(void);\n',
    'proxy/api/client.c': 'int proxy_object_get(void) { return 0; }\n',
}

CASES = [
    # (description, extra files, expected exit, expected text in output)
    ('a clean tree passes', {}, 0, '0 arrows against the rule'),
    ('a model file calling the API fails',
     {'proxy/model/up.c': 'int up(void) { return api_fn(); }\n'}, 1,
     'proxy/model/up.c -> proxy/api: api_fn'),
    ('a model file including an API header fails',
     {'proxy/api/a.h': 'int api_fn(void);\n',
      'proxy/model/inc.c': '#include "proxy/api/a.h"\nstatic int x;\n'}, 1,
     'proxy/model/inc.c -> proxy/api: #include proxy/api/a.h'),
    ('admission calling the client contract (defined in the API) fails',
     {'proxy/admission/q.c': '#include "proxy/proxy.h"\n'
                             'int q(void) { return proxy_object_get(); }\n'}, 1,
     'proxy/admission/q.c -> proxy/api: proxy_object_get'),
    ('a controller calling the client contract passes',
     {'proxy/controllers/c.c': '#include "proxy/client.h"\n'
                               'int c(void) { return proxy_object_get(); }\n'}, 0,
     '0 arrows against the rule'),
    ('a controller including the server\'s lifecycle header fails',
     {'proxy/controllers/c.c': '#include "proxy/proxy.h"\n'
                               'int c(void) { return proxy_object_get(); }\n'}, 1,
     'proxy/controllers/c.c -> proxy@public: #include proxy/proxy.h'),
    ('a static namesake of an upper function passes',
     {'proxy/model/s.c': 'static int api_fn(void) { return 2; }\n'
                         'int s(void) { return api_fn(); }\n'}, 0,
     '0 arrows against the rule'),
    ('the product including a test header fails',
     {'tests/host/t.h': 'int test_only(void);\n',
      'cmd/main.c': '#include "tests/host/t.h"\nint main(void) { return test_only(); }\n'}, 1,
     'cmd/main.c -> tests: #include tests/host/t.h'),
]


def run_case(desc, extra, want_rc, want_text):
    with tempfile.TemporaryDirectory() as d:
        for path, text in {**BASE, **extra}.items():
            os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(d, path), 'w', encoding='utf-8') as f:
                f.write(text)
        p = subprocess.run([sys.executable, CHECK, d], capture_output=True, text=True)
        ok = p.returncode == want_rc and want_text in p.stdout
        print('%s %s' % ('ok  ' if ok else 'FAIL', desc))
        if not ok:
            print('    exit %d, output:\n%s' % (p.returncode, p.stdout))
        return ok


def main():
    results = [run_case(*c) for c in CASES]
    print('%d passed, %d failed' % (results.count(True), results.count(False)))
    return 0 if all(results) else 1


if __name__ == '__main__':
    sys.exit(main())
