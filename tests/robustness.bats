#!/usr/bin/env bats
# robustness: the same inputs give byte-identical files at every stage
# across runs and thread counts; an interrupted tool (SIGINT, SIGTERM, a
# file-size limit, a full disk) leaves neither output nor temporary and
# says what happened in one line; every tool is linear in the graph's
# length (a chain of Relu ops, 100,000 in the full suite).
load helpers

bats_require_minimum_version 1.5.0

EX="$BATS_TEST_DIRNAME/../examples/tiny_cnn"

# pipeline DIR THREADS: tiny_cnn through every stage into DIR, calibrate
# and ir-run with THREADS threads (OMP_NUM_THREADS too).
pipeline() {
	local d=$1 j=$2
	mkdir -p "$d"
	export OMP_NUM_THREADS=$j
	onnx2top "$EX/model.onnx" -o "$d/origin.top"
	top-opt "$d/origin.top" -o "$d/canonical.top"
	calibrate "$d/canonical.top" -d "$EX/calib.npz" -j "$j" -o "$d/cali.table"
	calibrate "$d/canonical.top" -d "$EX/calib.npz" -j "$j" --shard 1/1 -o "$d/stats.part"
	top2tpu "$d/canonical.top" --chip tpu-a --mode int8 --calib "$d/cali.table" -o "$d/lowered.tpu"
	weight-reorder "$d/lowered.tpu" -o "$d/reordered.tpu"
	layergroup "$d/reordered.tpu" -o "$d/grouped.tpu"
	addr-assign "$d/grouped.tpu" -o "$d/addressed.tpu" 2>/dev/null
	codegen "$d/addressed.tpu" -o "$d/model.tmodel"
	tpu-sim "$d/model.tmodel" -i "$EX/input.npz" -o "$d/sim.npz" -q
	ir-run "$d/addressed.tpu" -i "$EX/input.npz" --threads "$j" -o "$d/tpu.npz"
	ir-run "$d/canonical.top" -i "$EX/input.npz" --threads "$j" -o "$d/top.npz"
	unset OMP_NUM_THREADS
}

@test "every stage's file is byte-identical across runs and thread counts" {
	local T=$BATS_TEST_TMPDIR
	pipeline "$T/a" 1
	pipeline "$T/b" 1
	pipeline "$T/c" 2
	local n=0 f
	for f in "$T"/a/*; do
		f=${f##*/}
		cmp "$T/a/$f" "$T/b/$f" || fail "$f differs between two runs"
		cmp "$T/a/$f" "$T/c/$f" || fail "$f differs between 1 and 2 threads"
		n=$((n + 1))
	done
	[ "$n" -eq 12 ]
}

# no_leftovers DIR: DIR holds no file (output or temporary).
no_leftovers() {
	run ls -A "$1"
	assert_output ''
}

@test "a file-size limit (ulimit -f) fails the write in one line and leaves nothing" {
	local T=$BATS_TEST_TMPDIR
	pipeline "$T/p" 1
	mkdir "$T/out"
	# 4 KiB: smaller than each of these outputs
	local cmd
	for cmd in "onnx2top $EX/model.onnx" "top-opt $T/p/origin.top" \
		"weight-reorder $T/p/lowered.tpu" "codegen $T/p/addressed.tpu" \
		"tpu-sim $T/p/model.tmodel -i $EX/input.npz --dump-all" \
		"ir-run $T/p/canonical.top -i $EX/input.npz --dump-all"; do
		run --separate-stderr bash -c "ulimit -f 4 && exec $cmd -o $T/out/f"
		[ "$status" -eq 1 ] || fail "$cmd: status $status ($stderr)"
		[ "${#stderr_lines[@]}" -eq 1 ] || fail "$cmd: not one line: $stderr"
		[[ $stderr == *"cannot write '$T/out/f': File too large" ]] || fail "$cmd: $stderr"
		no_leftovers "$T/out"
	done
}

@test "a full disk (a small tmpfs) fails the write in one line and leaves nothing" {
	local T=$BATS_TEST_TMPDIR
	mkdir "$T/small"
	[ "$(id -u)" -eq 0 ] || skip "mounting a tmpfs needs root"
	mount -t tmpfs -o size=4k tmpfs "$T/small" 2>/dev/null || skip "cannot mount a tmpfs here"
	pipeline "$T/p" 1
	local cmd rc=0
	for cmd in "onnx2top $EX/model.onnx" "codegen $T/p/addressed.tpu" \
		"ir-run $T/p/canonical.top -i $EX/input.npz --dump-all"; do
		run --separate-stderr bash -c "exec $cmd -o $T/small/f"
		[ "$status" -eq 1 ] || { rc=1; echo "$cmd: status $status"; }
		[[ $stderr == *"cannot write '$T/small/f': No space left on device" ]] ||
			{ rc=1; echo "$cmd: $stderr"; }
		[ -z "$(ls -A "$T/small")" ] || { rc=1; echo "$cmd: left $(ls -A "$T/small")"; }
	done
	umount "$T/small"
	[ "$rc" -eq 0 ]
}

# stopped SIG TOOL: TOOL, blocked reading a FIFO, gets SIG: it ends by that
# signal, prints "TOOL: stopped by SIG" and writes no output.
stopped() {
	local T=$BATS_TEST_TMPDIR sig=$1 tool=$2
	rm -f "$T/fifo" "$T/err"
	mkdir -p "$T/o"
	mkfifo "$T/fifo"
	# a background job starts with SIGINT ignored: give it back its default
	env --default-signal=INT "$tool" "$T/fifo" -o "$T/o/out" 2>"$T/err" &
	local pid=$!
	# signal it only once it waits for the FIFO's writer, with its handlers
	# set: a loaded machine (or a sanitizer build) may take seconds to start
	local i
	for i in $(seq 100); do
		[ "$(cat "/proc/$pid/wchan" 2>/dev/null)" = wait_for_partner ] && break
		sleep 0.1
	done
	kill -s "$sig" "$pid"
	local st=0
	wait "$pid" || st=$?
	[ "$st" -eq $((128 + $(kill -l "$sig"))) ] || fail "$tool: status $st after $sig"
	run cat "$T/err"
	assert_output "$tool: stopped by SIG$sig"
	no_leftovers "$T/o"
}

@test "SIGINT and SIGTERM stop a tool with one line and no output" {
	stopped INT top-opt
	stopped TERM top-opt
	stopped TERM layergroup
	stopped INT codegen
}

# chain_ops: the chain's length: 100,000 ops in the full suite, 20,000 in
# the quick one, a tenth of that under the sanitizers.
chain_ops() {
	local n=100000
	[ "${TPUC_QUICK:-0}" = 1 ] && n=20000
	case ${B:-build} in *san*) n=$((n / 10)) ;; esac
	echo "$n"
}

@test "a chain of Relu ops goes through every tool in CPU time linear in its length" {
	local T=$BATS_TEST_TMPDIR n
	n=$(chain_ops)
	$PY "$BATS_TEST_DIRNAME/fixtures/make_chain.py" "$n" "$T"
	# 20 s of CPU per tool for 100,000 ops (measured: at most 11 s, for
	# calibrate's 100,000 histograms), and 2 s at any length: layergroup's
	# search does a bounded amount of work (about 1 s, 11 s under the
	# sanitizers) once the chain is long; a quadratic part passes it by far
	local limit=$((20 * n / 100000 + 2))
	case ${B:-build} in *san*) limit=$((limit * 10)) ;; esac
	TIMEFORMAT='%U %S'
	local steps=(
		"onnx2top $T/chain.onnx -o $T/o.top"
		"top-opt $T/o.top -o $T/c.top"
		"calibrate $T/c.top -d $T/input.npz -o $T/cal.table"
		"top2tpu $T/c.top --chip tpu-a --mode int8 --calib $T/cal.table -o $T/l.tpu"
		"weight-reorder $T/l.tpu -o $T/r.tpu"
		"layergroup $T/r.tpu -o $T/g.tpu"
		"addr-assign $T/g.tpu -o $T/a.tpu"
		"codegen $T/a.tpu -o $T/m.tmodel"
		"tpu-sim $T/m.tmodel -i $T/input.npz -o $T/sim.npz -q"
		"ir-run $T/a.tpu -i $T/input.npz -o $T/tpu.npz"
		"ir-run $T/c.top -i $T/input.npz -o $T/top.npz"
	)
	local s cpu
	for s in "${steps[@]}"; do
		cpu=$( { time $s >/dev/null 2>"$T/err"; } 2>&1 ) || fail "$s: $(cat "$T/err")"
		cpu=$(echo "$cpu" | awk '{ printf "%.1f", $1 + $2 }')
		echo "# $n ops: ${s%% *} ${cpu} s CPU (limit $limit)" >&3
		awk -v c="$cpu" -v l="$limit" 'BEGIN { exit !(c <= l) }' ||
			fail "${s%% *}: $cpu s of CPU for $n ops (limit $limit s)"
	done
	# and the chain computed what a chain of Relu computes
	$PY -c 'import sys, numpy as np
x = np.load(sys.argv[1])["x"]
for f in sys.argv[2:]:
    y = np.load(f)["y"]
    assert np.abs(y - np.maximum(x, 0)).max() < 0.02, f' \
		"$T/input.npz" "$T/sim.npz" "$T/tpu.npz" "$T/top.npz"
}

# The tools from onnx2top to codegen on model $1 in bf16, into $T, as
# command lines (layergroup runs of two ops at most, -n 2).
bf16_steps() {
	printf '%s\n' "onnx2top $1 -o $T/o.top" "top-opt $T/o.top -o $T/c.top" \
		"top2tpu $T/c.top --chip tpu-a --mode bf16 -o $T/l.tpu" \
		"weight-reorder $T/l.tpu -o $T/r.tpu" "layergroup $T/r.tpu -n 2 -o $T/g.tpu" \
		"addr-assign $T/g.tpu -o $T/a.tpu" "codegen $T/a.tpu -o $T/m.tmodel"
}

# within_cpu LIMIT WHAT STEP...: each command line under ulimit -t LIMIT;
# fails naming WHAT and the tool that failed or ran out.
within_cpu() {
	local limit=$1 what=$2 s
	shift 2
	for s in "$@"; do
		bash -c "ulimit -t $limit && exec $s" >/dev/null 2>"$T/err" ||
			fail "$what${s%% *} failed or passed $limit s of CPU: $(cat "$T/err")"
	done
}

# Long graphs of small ops through every tool, each tool under a CPU limit
# (ulimit -t) that a part quadratic in the graph's length passes by far:
# a Relu chain on [450,4] that top2tpu spreads over the lanes (names made
# unique, views cancelled, readers asked per op: 4.6 s for 5,000 ops when
# each was a scan of the graph, 0.02 s now), 2,000 branches summed by a
# chain of Adds (top-opt's row views walked the chain from each Add: over
# 100 s, now 0.1 s), 12,000 Adds and Muls of constants (top-opt's
# fold-affine rebuilt the pattern driver's index after each of its 6,000
# rewrites: 3.5 s, now 0.14 s), 3x3 Convs.  layergroup searches runs of two
# ops at most (bf16_steps): its search is bounded but costs seconds per
# tool at these lengths, which this test does not time.
@test "long chains, a wide graph: every tool in bf16 within 2 s of CPU each" {
	local T=$BATS_TEST_TMPDIR kind n
	local limit=2
	case ${B:-build} in *san*) limit=20 ;; esac
	for kind in relu:5000 wide:2000 addmul:12000 conv:1000; do
		n=${kind#*:} kind=${kind%:*}
		$PY "$BATS_TEST_DIRNAME/fixtures/make_chains.py" "$kind" "$n" "$T"
		local steps
		mapfile -t steps < <(bf16_steps "$T/$kind.onnx")
		within_cpu "$limit" "$kind, $n ops: " "${steps[@]}"
	done
	# and the chip runs the last, the Convs, as the interpreter does
	tpu-sim "$T/m.tmodel" -i "$T/conv.npz" -o "$T/sim.npz" -q
	ir-run "$T/a.tpu" -i "$T/conv.npz" -o "$T/tpu.npz"
	npz-compare "$T/sim.npz" "$T/tpu.npz" --tolerance 0,0 >/dev/null
}

# Many tensors live at once, and many Slices of one tensor each read by a
# quantising Cast, each tool under the CPU limit above: 10,000 branches
# summed by a chain of Adds hold 10,000 tensors live together (addr-assign
# sorted every overlapping placed tensor for each one: 3.3 s, now 0.2 s),
# and 8,000 one-channel Slices of the f32 input, each through its own
# quantising Cast to a 1x1 Conv, in int8 (top2tpu's lower_cast scanned the
# graph for each Slice's Cast: about 2.9 s, now under 1 s).  calibrate is
# not timed.
@test "many live tensors, many Slices of one tensor: addr-assign and top2tpu within 2 s of CPU each" {
	local T=$BATS_TEST_TMPDIR
	local limit=2
	case ${B:-build} in *san*) limit=20 ;; esac
	$PY "$BATS_TEST_DIRNAME/fixtures/make_chains.py" wide 10000 "$T"
	$PY "$BATS_TEST_DIRNAME/fixtures/make_chains.py" slices 8000 "$T"
	local steps
	mapfile -t steps < <(bf16_steps "$T/wide.onnx")
	within_cpu "$limit" "" "${steps[@]}" "onnx2top $T/slices.onnx -o $T/so.top" \
		"top-opt $T/so.top -o $T/sc.top"
	calibrate "$T/sc.top" -d "$T/slices.npz" -o "$T/cal.table" >/dev/null 2>"$T/err" ||
		fail "calibrate failed: $(cat "$T/err")"
	within_cpu "$limit" "" "top2tpu $T/sc.top --chip tpu-a --mode int8 --calib $T/cal.table -o $T/sl.tpu"
	# the Slices' Casts became one Cast of the input, the Slices copying codes
	run --separate-stderr ir-print "$T/sl.tpu"
	[ "$(grep -c ' = Cast(%x)' <<<"$output")" -eq 1 ]
	[ "$(grep -c ' = Slice(%x)' <<<"$output")" -eq 0 ]
	[ "$(grep -c ' = Slice(%x_i8)' <<<"$output")" -eq 8000 ]
}

