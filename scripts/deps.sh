#!/bin/sh
# deps.sh - install the Debian packages tpuc needs to build and test, only
# those missing; quiet when everything is present (run by `make deps`).
set -eu

# DEPS_PKGS replaces the list (tests).
PKGS=${DEPS_PKGS:-"build-essential pkg-config libprotobuf-c-dev protobuf-c-compiler
libonnx-dev libmsgpack-dev libdnnl-dev libzstd-dev libzip-dev zlib1g-dev
bats bats-assert bats-support bats-file mandoc python3-numpy python3-onnx
libonnx-testdata python3-msgpack valgrind clang libclang-rt-14-dev"}

missing=
for p in $PKGS; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
	SUDO=
elif command -v sudo >/dev/null 2>&1; then
	SUDO=sudo
else
	echo "deps.sh: missing packages:$missing; run as root to install them" >&2
	exit 1
fi

# Another apt or dpkg (unattended-upgrades, a second shell) may hold the
# package manager: wait for it, saying so, rather than fail.  apt-get waits
# for the dpkg lock itself (DPkg::Lock::Timeout, apt >= 1.9.11); the lists
# lock that `apt-get update` takes is waited for here.  DEPS_LOCK_TIMEOUT
# seconds (default 600) bound the wait.
TIMEOUT=${DEPS_LOCK_TIMEOUT:-600}
LISTS_LOCK=${DEPS_LISTS_LOCK:-/var/lib/apt/lists/lock}

# 0 when some process holds the lock file $1 (fuser, else flock, else no).
lock_busy() {
	[ -e "$1" ] || return 1
	if command -v fuser >/dev/null 2>&1; then
		$SUDO fuser "$1" >/dev/null 2>&1
	elif command -v flock >/dev/null 2>&1; then
		! $SUDO flock -n "$1" true 2>/dev/null
	else
		return 1
	fi
}

wait_lock() {
	waited=0
	while lock_busy "$1"; do
		if [ "$waited" -eq 0 ]; then
			echo "deps.sh: waiting for another package manager to release $1 (up to ${TIMEOUT}s)" >&2
		fi
		if [ "$waited" -ge "$TIMEOUT" ]; then
			echo "deps.sh: $1 still held after ${TIMEOUT}s; try again when the other apt is done" >&2
			exit 1
		fi
		sleep 2
		waited=$((waited + 2))
	done
}

echo "deps.sh: installing$missing" >&2
wait_lock "$LISTS_LOCK"
$SUDO apt-get -o DPkg::Lock::Timeout="$TIMEOUT" update -qq
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive \
	apt-get -o DPkg::Lock::Timeout="$TIMEOUT" install -y -qq --no-install-recommends \
	$missing >/dev/null
