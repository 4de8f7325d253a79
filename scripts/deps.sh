#!/bin/sh
# deps.sh - install the Debian packages tpuc needs to build and test, only
# those missing; quiet when everything is present (run by `make deps`).
set -eu

PKGS="build-essential pkg-config libprotobuf-c-dev protobuf-c-compiler
libonnx-dev libmsgpack-dev libdnnl-dev libzstd-dev libzip-dev zlib1g-dev
bats bats-assert bats-support bats-file mandoc python3-numpy python3-onnx
libonnx-testdata python3-msgpack valgrind clang libclang-rt-14-dev"

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

echo "deps.sh: installing$missing" >&2
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
