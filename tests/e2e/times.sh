#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# times.sh FILE...: the e2e suites' times (lines "SUITE SECONDS PASSED
# FAILED", written by run.sh), slowest first, with their sum. With several
# files (shards run side by side), each file's sum is shown too: the wall
# time of the e2e step is about the largest of them.
awk '
  FNR == 1 { nf++ }
  { t[$1] += $2; p[$1] += $3; f[$1] += $4; sh[$1] = FILENAME; tot += $2; ftot[FILENAME] += $2; n++ }
  END {
    if (!n) exit
    printf "%-24s %8s %6s %6s  %s\n", "suite", "seconds", "passed", "failed", "file"
    cmd = "sort -k2,2nr"
    for (s in t) {
      fn = sh[s]; sub(/.*\//, "", fn)
      printf "%-24s %8.1f %6d %6d  %s\n", s, t[s], p[s], f[s], fn | cmd
    }
    close(cmd)
    if (nf > 1) for (fl in ftot) {
      fn = fl; sub(/.*\//, "", fn)
      printf "%-24s %8.1f\n", "sum of " fn, ftot[fl]
    }
    printf "%-24s %8.1f\n", "sum (" n " suites)", tot
  }' "$@"
