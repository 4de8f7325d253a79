#!/usr/bin/env bats
# install.bats - `make install` puts every tool and its man page under
# PREFIX (inside DESTDIR), and every man page is clean under mandoc -Tlint.

load helpers

tools() {
	sed -n '/^TOOLS :=/,/[^\\]$/p' "$REPO/Makefile" | sed 's/^TOOLS :=//; s/\\//' | tr -s ' \t\n' '\n' | grep .
}

@test "make install puts each tool in PREFIX/bin and its page in PREFIX/share/man/man1" {
	dest=$BATS_TEST_TMPDIR/root
	run make -C "$REPO" --no-print-directory install B="${B:-build}" PREFIX=/opt/tpuc DESTDIR="$dest"
	assert_success
	n=0
	for t in $(tools); do
		[ -x "$dest/opt/tpuc/bin/$t" ] || fail "tool $t not installed"
		[ -f "$dest/opt/tpuc/share/man/man1/$t.1" ] || fail "man page $t.1 not installed"
		n=$((n + 1))
	done
	[ "$n" -ge 11 ] || fail "only $n tools listed in the Makefile"
	for f in "$REPO"/formats/*.5; do
		[ -f "$dest/opt/tpuc/share/man/man5/$(basename "$f")" ] || fail "$(basename "$f") not installed"
	done
}

@test "every tool has a man page and every page is clean under mandoc -Tlint" {
	command -v mandoc >/dev/null || skip "mandoc not installed"
	for t in $(tools); do
		[ -f "$REPO/man/man1/$t.1" ] || fail "no man page for $t"
	done
	run mandoc -Tlint -W warning "$REPO"/man/man1/*.1 "$REPO"/man/man3/*.3 "$REPO"/formats/*.5
	assert_success
	assert_output ""
}

@test "every tool answers -h with its usage and exit 0" {
	for t in $(tools); do
		run "$t" -h
		[ "$status" -eq 0 ] || fail "$t -h exited $status"
		[[ "$output" == *"$t"* ]] || fail "$t -h does not name the tool: $output"
	done
}

# install_to PREFIX: make install there (no DESTDIR).
install_to() {
	make -C "$REPO" --no-print-directory -s install B="${B:-build}" PREFIX="$1" >/dev/null
}

@test "make install: libtpuc, tpuc.h, tpuc.pc, tpuc(3), completion, LICENSE; the example builds with pkg-config and writes tpu-sim's bytes" {
	local p=$BATS_TEST_TMPDIR/prefix T=$BATS_TEST_TMPDIR
	install_to "$p"
	for f in lib/libtpuc.a include/tpuc.h lib/pkgconfig/tpuc.pc share/man/man3/tpuc.3 \
		share/bash-completion/completions/tpu-sim share/doc/tpuc/LICENSE; do
		[ -f "$p/$f" ] || fail "$f not installed"
	done
	export PKG_CONFIG_PATH=$p/lib/pkgconfig
	run pkg-config --modversion tpuc
	assert_output "$(tpu-sim --version | awk '{ print $NF }')"
	# outside the source tree: only the installed files
	cd "$T"
	cc "$REPO/examples/embed/embed.c" $(pkg-config --cflags --libs tpuc) -o embed
	local EX=$REPO/examples/tiny_cnn
	for m in int8 f32; do
		make --no-print-directory -f "$REPO/pipelines/deploy.mk" TPUC_BIN="$TPUC_BUILD/bin" \
			MODEL="$EX/model.onnx" INPUT="$EX/input.npz" CALIB="$EX/calib.npz" \
			MODE=$m OUT="$T/$m" all >/dev/null
		./embed "$T/$m/model.tmodel" "$EX/input.npz" "$T/$m/embed.npz" 2>"$T/err"
		tpu-sim "$T/$m/model.tmodel" -i "$EX/input.npz" -o "$T/$m/sim.npz" 2>"$T/sim.err"
		cmp "$T/$m/embed.npz" "$T/$m/sim.npz"
		# the same cycles
		local cyc
		cyc=$(sed -n 's/^tpu-sim: .*: \([0-9]*\) cycles.*/\1/p' "$T/sim.err")
		grep -q ": $cyc cycles" "$T/err" || fail "embed: $(cat "$T/err"), tpu-sim $cyc cycles"
	done
	# numpy's float64 input, as tpu-sim takes it
	$PY -c 'import numpy as np, sys; x = np.load(sys.argv[1]); np.savez(sys.argv[2], input=x["input"].astype(np.float64))' \
		"$EX/input.npz" "$T/in64.npz"
	./embed "$T/int8/model.tmodel" "$T/in64.npz" "$T/e64.npz" 2>/dev/null
	cmp "$T/e64.npz" "$T/int8/sim.npz"
	# errors: one line each
	run ./embed "$T/int8/model.tmodel" "$T/nope.npz" "$T/o.npz"
	assert_failure 1
	assert_output "embed: cannot open '$T/nope.npz': No such file or directory"
	run ./embed "$T/int8/addressed.tpu" "$EX/input.npz" "$T/o.npz"
	assert_failure 1
	assert_output --partial "embed: '$T/int8/addressed.tpu': not a tmodel file (bad magic)"
	[ ! -e "$T/o.npz" ]
	cc -Wall -Wextra -Werror "$REPO/tests/fixtures/api_errors.c" $(pkg-config --cflags --libs tpuc) -o api_errors
	run ./api_errors "$T/int8/model.tmodel"
	assert_success
	assert_line "open missing: cannot open '/nonexistent/m.tmodel': No such file or directory"
	assert_line "open memory garbage: '<memory>': not a tmodel file (bad magic)"
	assert_line "model: tiny_cnn tpu-a int8, 1 in, 1 out, input input f32 count 3072"
	assert_line "stages: 1, selected 0"
	assert_line "select stage 1: '$T/int8/model.tmodel': no stage 1 (the model holds 1)"
	assert_line "select stage 0: no error"
	assert_line "input 5: '$T/int8/model.tmodel': no input 5 (the model has 1)"
	assert_line "input index: '$T/int8/model.tmodel': no input called 'nope'"
	assert_line "run unset: '$T/int8/model.tmodel': input 'input' not set (tpuc_set_input)"
	assert_line "output before run: '$T/int8/model.tmodel': no run yet (tpuc_run)"
	assert_line "cycles before run: -1"
	assert_line "short input: '$T/int8/model.tmodel': input 'input': 3071 elements given, it holds 3072"
	assert_line "bad dtype: '$T/int8/model.tmodel': input 'input': bad dtype 99"
	assert_line "set: no error"
	assert_line "run: no error"
	assert_line "cycles > 0: 1"
	assert_line "get short: '$T/int8/model.tmodel': output 'logits': room for 1 elements, it holds 10"
	assert_line "npz index: '<new>': no array for name 'x' (the file holds no arrays)"
	assert_line "npz add twice: '<new>': array 'x' already present"
	assert_line "npz save: cannot create '/nonexistent/dir/o.npz': No such file or directory"
	assert_line "npz load: cannot open '/nonexistent/i.npz': No such file or directory"
}

@test "make uninstall removes everything install put there: the prefix is left empty" {
	local p=$BATS_TEST_TMPDIR/prefix
	install_to "$p"
	[ -n "$(ls -A "$p")" ]
	run make -C "$REPO" --no-print-directory -s uninstall PREFIX="$p"
	assert_success
	run ls -A "$p"
	assert_output ""
	# with DESTDIR too; and a file of someone else's in a shared folder stays
	local d=$BATS_TEST_TMPDIR/root
	make -C "$REPO" --no-print-directory -s install B="${B:-build}" PREFIX=/usr/local DESTDIR="$d" >/dev/null
	touch "$d/usr/local/bin/other-tool"
	make -C "$REPO" --no-print-directory -s uninstall PREFIX=/usr/local DESTDIR="$d"
	run find "$d" -mindepth 1
	assert_output "$d/usr
$d/usr/local
$d/usr/local/bin
$d/usr/local/bin/other-tool"
}

@test "bash completion: options from --help, values of --chip and --mode, files by kind" {
	cd "$BATS_TEST_TMPDIR"
	touch a.tmodel b.npz c.tpu d.onnx
	run bash -c '
		shopt -s extglob
		complete() { :; }   # no readline here: call the function directly
		source "$1"
		comp() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _tpuc; printf "%s\n" "${COMPREPLY[@]}" | sort | paste -sd" " -; }
		comp tmodel-info --j
		comp tpu-sim --v
		comp top2tpu m.top --chip ""
		comp top2tpu m.top --mode i
		comp tpu-sim ""
		comp ir-run c.tpu -i ""
		comp onnx2top ""
		comp ir-cut ""
	' _ "$REPO/completions/tpuc.bash"
	assert_success
	assert_line --index 0 "--json"
	assert_line --index 1 "--version"
	assert_line --index 2 "tpu-a tpu-b"
	assert_line --index 3 "int8"
	assert_line --index 4 "a.tmodel"
	assert_line --index 5 "b.npz"
	assert_line --index 6 "d.onnx"
	assert_line --index 7 "c.tpu"
}
