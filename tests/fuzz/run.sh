#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs them one after
# the other, never two at a time.
#
#   tests/fuzz/run.sh [SECONDS] [NAME...]   fuzz each target for SECONDS (10);
#                                           new inputs go to build-fuzz/corpus/<name>
#   tests/fuzz/run.sh --regression [NAME...] run each checked-in corpus once
#                                           (-runs=0): what scripts/test.sh does
#
# Seeds live in tests/fuzz/corpus/<name>/ (read only here), optional
# libFuzzer dictionaries in tests/fuzz/dict/<name>.dict; crashes are
# written to build-fuzz/crashes/<name>/. BUILD_DIR overrides build-fuzz.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/fuzz
build=${BUILD_DIR:-build-fuzz}
mode=fuzz
secs=10
if [ "${1:-}" = --regression ]; then
	mode=regression
	shift
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then
	secs=$1
	shift
fi
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for f in "$here"/fuzz_*.c; do
		n=${f##*/fuzz_}
		names+=("${n%.c}")
	done
fi

command -v clang >/dev/null || { echo "fuzz: clang not found" >&2; exit 1; }
if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" -Dfuzz=true -Db_sanitize=address,undefined \
		-Db_lundef=false >/dev/null
fi
ninja -C "$build" $(printf "tests/fuzz/fuzz_%s " "${names[@]}") >/dev/null

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
failed=()
for n in "${names[@]}"; do
	bin="$build/tests/fuzz/fuzz_$n"
	seeds="$here/corpus/$n"
	log="$build/fuzz-$n.log"
	if [ "$mode" = regression ]; then
		args=(-runs=0 "$seeds")
	else
		mkdir -p "$build/corpus/$n" "$build/crashes/$n"
		args=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -max_len=8192
		      -artifact_prefix="$build/crashes/$n/")
		[ -f "$here/dict/$n.dict" ] && args+=(-dict="$here/dict/$n.dict")
		args+=("$build/corpus/$n" "$seeds")
	fi
	if "$bin" "${args[@]}" >"$log" 2>&1; then
		echo "fuzz $n: ok ($(grep -Eo '(Done|INITED) [^#]*#?[0-9]+ [a-z ]*' "$log" | tail -1 || true))"
	else
		echo "fuzz $n: FAILED (log: $log)"
		grep -E 'ERROR|SUMMARY|runtime error|invariant|Test unit written' "$log" | head -5 || true
		failed+=("$n")
	fi
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz: ${#failed[@]} failed: ${failed[*]}"
	exit 1
fi
echo "fuzz: ${#names[@]} targets ok ($mode)"
