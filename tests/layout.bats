#!/usr/bin/env bats
# The shape of lib/ (ARCHITECTURE.md): stage folders in one order, every
# #include and every call pointing down it, no cycles between modules, no
# source file over 1,500 lines.  tests/layout.py is the checker; the cases
# after the first show it catches each kind of breach.
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	ROOT=$BATS_TEST_DIRNAME/..
	CHECK="$PY $ROOT/tests/layout.py"
	mkdir -p "$T/lib/ir" "$T/lib/back"
	printf '#include "ir/a.h"\nint a(void) { return 1; }\n' >"$T/lib/ir/a.c"
	printf 'int a(void);\n' >"$T/lib/ir/a.h"
	printf '#include "ir/a.h"\n#include "back/b.h"\nint b(void) { return a(); }\n' >"$T/lib/back/b.c"
	printf 'int b(void);\n' >"$T/lib/back/b.h"
}

@test "lib/ keeps the folder order, with no include or call cycles" {
	[ -d "$ROOT/${B:-build}/lib/ir" ] || skip "library not built"
	run $CHECK "$ROOT/lib" "$ROOT/${B:-build}/lib"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "a clean two-folder tree passes" {
	run $CHECK "$T/lib"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "an include pointing up the order fails, naming the line" {
	printf '#include "back/b.h"\n' >>"$T/lib/ir/a.c"
	run $CHECK "$T/lib"
	[ "$status" -eq 1 ]
	[[ "$output" == *'/ir/a.c:3: #include "back/b.h" points up (ir is below back)'* ]]
}

@test "an include cycle between two modules of one folder fails" {
	printf '#include "ir/c.h"\nint a(void);\n' >"$T/lib/ir/a.h"
	printf '#include "ir/a.h"\n' >"$T/lib/ir/c.h"
	run $CHECK "$T/lib"
	[ "$status" -eq 1 ]
	[[ "$output" == *"include cycle between modules: ir/a -> ir/c -> ir/a"* ]]
}

@test "an include without its folder, a folder out of the order, a file over 1500 lines" {
	printf '#include "a.h"\n' >>"$T/lib/back/b.c"
	mkdir "$T/lib/misc"
	seq 1501 | sed 's/.*/;/' >"$T/lib/ir/long.c"
	run $CHECK "$T/lib"
	[ "$status" -eq 1 ]
	[[ "$output" == *'#include "a.h" does not name its folder'* ]]
	[[ "$output" == *"/misc: folder not in the order"* ]]
	[[ "$output" == *"/ir/long.c: 1501 lines, over 1500"* ]]
}

@test "with the objects: a call up the order and a call cycle fail" {
	# ir/a calls b() of back/b without including its header.
	printf 'int b(void);\nint a(void) { return b(); }\n' >"$T/lib/ir/a.c"
	printf 'int c(void);\nint d(void) { return c(); }\n' >"$T/lib/back/d.c"
	printf 'int d(void);\nint c(void) { return d(); }\n' >"$T/lib/back/c.c"
	for m in ir/a back/b back/c back/d; do
		mkdir -p "$T/obj/${m%/*}"
		cc -I"$T/lib" -c -o "$T/obj/$m.o" "$T/lib/$m.c"
	done
	run $CHECK "$T/lib"
	[ "$status" -eq 0 ]
	run $CHECK "$T/lib" "$T/obj"
	[ "$status" -eq 1 ]
	[[ "$output" == *"/ir/a.o calls b of back/b: points up"* ]]
	[[ "$output" == *"call cycle between modules: back/c -> back/d -> back/c"* ]]
}
