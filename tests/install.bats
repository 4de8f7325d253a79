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
	run mandoc -Tlint -W warning "$REPO"/man/man1/*.1 "$REPO"/formats/*.5
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
