#!/bin/bash
# run.sh DIR SEEDS SECONDS READER... - run each reader's harness (fuzz.mk).
# SECONDS > 0: DIR/fuzz-READER under libFuzzer for that long from the seeds,
# the regression files of tests/fuzz/READER and the corpus it keeps in
# build-fuzz/corpus/READER; a finding is saved as
# build-fuzz/crashes/READER-*.  SECONDS = 0: DIR/replay-READER replays the
# seeds and the regression files once.  One line per reader (executions,
# CPU seconds); exits 1 after the first reader that crashed, leaked, timed
# out or drew a sanitizer report, with the end of its log.
set -u
DIR=$1 SEEDS=$2 SECS=$3
shift 3
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p build-fuzz/crashes build-fuzz/logs
TIMEFORMAT='%U %S'
total=0
for r in "$@"; do
	dirs=()
	[ -d "$SEEDS/$r" ] && dirs+=("$SEEDS/$r")
	[ -d "tests/fuzz/$r" ] && dirs+=("tests/fuzz/$r")
	log=build-fuzz/logs/$r.log
	if [ "$SECS" -gt 0 ]; then
		mkdir -p "build-fuzz/corpus/$r"
		cmd=("$DIR/fuzz-$r" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048
			-malloc_limit_mb=1024 -print_final_stats=1
			-artifact_prefix="build-fuzz/crashes/$r-" "build-fuzz/corpus/$r" "${dirs[@]}")
	else
		cmd=("$DIR/replay-$r" "${dirs[@]}")
	fi
	cpu=$( { time "${cmd[@]}" >"$log" 2>&1; echo "rc=$?" >"$log.rc"; } 2>&1 )
	rc=$(sed 's/rc=//' "$log.rc")
	cpu=$(echo "$cpu" | awk '{ printf "%.1f", $1 + $2 }')
	if [ "$SECS" -gt 0 ]; then
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	else
		execs=$(sed -n 's/.*: \([0-9]*\) inputs replayed$/\1/p' "$log")
	fi
	if [ "$rc" != 0 ]; then
		echo "fuzz $r: FAILED (exit $rc) after ${execs:-?} executions, $cpu s CPU; log $log:"
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written|out-of-memory|Timeout' "$log" | head -n 20
		exit 1
	fi
	echo "fuzz $r: ${execs:-0} executions, $cpu s CPU, 0 crashes"
done
