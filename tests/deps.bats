#!/usr/bin/env bats
# scripts/deps.sh: nothing to do when every package is there; waits, saying
# so, while another package manager holds the apt lists lock, and gives up
# after DEPS_LOCK_TIMEOUT seconds without running apt-get.
load helpers

bats_require_minimum_version 1.5.0

@test "deps.sh does nothing when every package is installed" {
	run sh "$REPO/scripts/deps.sh"
	assert_success
	assert_output ""
}

@test "deps.sh waits for a held lock with a message, then gives up" {
	[ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null || skip "neither root nor sudo"
	command -v flock >/dev/null || skip "no flock"
	local lock=$BATS_TEST_TMPDIR/lock
	: >"$lock"
	flock "$lock" sleep 30 &
	local holder=$!
	sleep 0.5
	# a package that is not installed, so that it gets past the first check;
	# the lock never frees, so apt-get is never reached
	run env DEPS_PKGS=tpuc-no-such-package DEPS_LISTS_LOCK="$lock" DEPS_LOCK_TIMEOUT=2 \
		sh "$REPO/scripts/deps.sh"
	kill "$holder" 2>/dev/null || true
	wait "$holder" 2>/dev/null || true
	assert_failure 1
	assert_line "deps.sh: waiting for another package manager to release $lock (up to 2s)"
	assert_line "deps.sh: $lock still held after 2s; try again when the other apt is done"
	refute_output --partial "E: "
}

@test "deps.sh goes on once the lock is released" {
	[ "$(id -u)" -eq 0 ] || skip "needs root (would call sudo)"
	command -v flock >/dev/null || skip "no flock"
	local lock=$BATS_TEST_TMPDIR/lock bin=$BATS_TEST_TMPDIR/bin
	: >"$lock"
	# a stand-in apt-get that only reports how it was called
	mkdir -p "$bin"
	printf '#!/bin/sh\necho "apt-get $*" >&2\n' >"$bin/apt-get"
	chmod +x "$bin/apt-get"
	flock "$lock" sleep 3 &
	local holder=$!
	sleep 0.5
	run env PATH="$bin:$PATH" DEPS_PKGS=tpuc-no-such-package DEPS_LISTS_LOCK="$lock" \
		DEPS_LOCK_TIMEOUT=20 sh "$REPO/scripts/deps.sh"
	wait "$holder" 2>/dev/null || true
	assert_success
	assert_line "deps.sh: waiting for another package manager to release $lock (up to 20s)"
	assert_line --regexp '^apt-get -o DPkg::Lock::Timeout=20 update -qq$'
	assert_line --regexp '^apt-get -o DPkg::Lock::Timeout=20 install -y -qq --no-install-recommends +tpuc-no-such-package$'
}
