#!/usr/bin/env bats
# batch-rows: a detector's tail unrolled over its classes (each class's
# score column, a threshold, then host ops) runs as one threshold over
# every class's row: top-opt batches it, top2tpu casts the rows the host
# reads in one Cast, addr-assign leaves each row where it lies.  Fewer
# commands and host barriers, the same outputs bit for bit.
load helpers

bats_require_minimum_version 1.5.0

setup_file() {
	export D="$BATS_FILE_TMPDIR"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/fixtures/class_loop.py" "$D"
}

# The default pipeline without batch-rows.
unbatched_passes() {
	top-opt --help 2>&1 | sed -n 's/^passes (default \(.*\)):$/\1/p' | sed 's/batch-rows,//'
}

# TOP .. tpu-sim in int8 on tpu-a with the table TABLE, into $D/NAME.*
backend() { # TOP TABLE NAME
	local n="$D/$3"
	run top2tpu "$1" --chip tpu-a --mode int8 --calib "$2" -o "$n.tpu"
	assert_success
	weight-reorder "$n.tpu" -o "$n.r.tpu"
	layergroup "$n.r.tpu" -o "$n.g.tpu"
	addr-assign "$n.g.tpu" -o "$n.a.tpu"
	codegen "$n.a.tpu" -o "$n.tmodel" -l "$n.lst"
	run tpu-sim "$n.tmodel" -i "$D/in.npz" -o "$n.npz" -p
	assert_success
	cycles=$(sed -n 's/^tpu-sim: tpu-a int8: \([0-9]*\) cycles.*/\1/p' <<<"$output")
}

@test "batch-rows: the six classes' thresholds are one Greater over the Softmax's rows; each class's mask and scores are views of its row" {
	run onnx2top "$D/c.onnx" -o "$D/c.top"
	assert_success
	run top-opt "$D/c.top" -o "$D/cc.top" --stats
	assert_success
	assert_output --regexp 'batch-rows +1'
	run ir-print "$D/cc.top"
	assert_success
	[ "$(grep -c ' = Greater(' <<<"$output")" -eq 1 ]
	assert_output --regexp '%scores_rows_t = Transpose\(%sm\) \{perm=\[0,2,1\]\} : \(f32\[1,64,7\]\) -> f32\[1,7,64\]'
	assert_output --regexp '%m1_batch = Greater\(%scores_rows_t, @t1\) : \(f32\[1,7,64\], f32\[\]\) -> bool\[1,7,64\]'
	assert_output --regexp '%m3_row = Slice\(%m1_batch\) \{starts=\[3\], ends=\[4\], axes=\[1\]'
	assert_output --regexp '%col3_slice_row = Slice\(%scores_rows_t\) \{starts=\[3\], ends=\[4\], axes=\[1\]'
	# without the pass: one per class, as imported
	run top-opt "$D/c.top" -o "$D/cn.top" --passes="$(unbatched_passes)"
	assert_success
	[ "$(ir-print "$D/cn.top" | grep -c ' = Greater(')" -eq 6 ]
}

@test "batch-rows: int8 on tpu-a, tpu-sim as ir-run, the outputs of the unbatched model bit for bit, half the commands, two host barriers instead of seven" {
	run make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
		MODEL="$D/c.onnx" INPUT="$D/in.npz" CALIB="$D/cal.npz" MODE=int8 CHIP=tpu-a \
		OUT="$D/int8" compare
	assert_success
	cmp "$D/int8/tpu_out.npz" "$D/int8/sim_out.npz"
	# the rows the host reads: one Cast to f32 of every class, each row
	# inside it (addr-assign), no command of its own
	run ir-print "$D/int8/addressed.tpu"
	assert_output --regexp '%scores_rows_t_f32 = Cast\(%scores_rows_t\) \{to="f32"\}'
	assert_output --regexp '%col3_slice_row_f32 = Slice\(%scores_rows_t_f32\)'
	backend "$D/int8/canonical.top" "$D/int8/cali.table" b
	local batched=$cycles
	cmp "$D/b.npz" "$D/int8/sim_out.npz"
	top-opt "$D/int8/origin.top" -o "$D/n.top" --passes="$(unbatched_passes)"
	backend "$D/n.top" "$D/int8/cali.table" n
	local unbatched=$cycles
	cmp "$D/n.npz" "$D/b.npz"
	# the listing's first line counts the commands
	local bd bc nd nc
	read -r bd bc < <(sed -n '1s/.*int8, \([0-9]*\) dma and \([0-9]*\) compute commands/\1 \2/p' "$D/b.lst")
	read -r nd nc < <(sed -n '1s/.*int8, \([0-9]*\) dma and \([0-9]*\) compute commands/\1 \2/p' "$D/n.lst")
	echo "dma $bd/$nd compute $bc/$nc cycles $batched/$unbatched" >&3
	[ "$((2 * bd))" -le "$nd" ]
	[ "$bc" -lt "$nc" ]
	[ "$batched" -lt "$unbatched" ]
	# host barriers: the DMA commands host commands wait for
	[ "$(grep ' host ' "$D/b.lst" | grep -o 'wait d[0-9]*' | sort -u | wc -l)" -eq 2 ]
	[ "$(grep ' host ' "$D/n.lst" | grep -o 'wait d[0-9]*' | sort -u | wc -l)" -eq 7 ]
}
