# lib.sh - helpers the ir-run benchmarks share (sourced, not run).

# run_options NAME "$@": the options both take, -n RUNS (default 20), -r
# ROUNDS (3) and -t THREADS ("1 2"), into those variables; a bad option
# prints NAME's usage and exits 2.  The caller then drops them with
# shift $((OPTIND - 1)).
run_options() {
	local name=$1 o
	shift
	RUNS=20 ROUNDS=3 THREADS="1 2"
	while getopts n:r:t:h o; do
		case $o in
		n) RUNS=$OPTARG ;;
		r) ROUNDS=$OPTARG ;;
		t) THREADS=$OPTARG ;;
		*) echo "usage: bench/$name.sh [-n RUNS] [-r ROUNDS] [-t \"1 2\"] [MODEL...]" >&2
		   exit 2 ;;
		esac
	done
}

# copy_tools PROG FROM TO TOOL...: copies of the tools in folder TO, so
# that a rebuild during the run changes nothing (a tool being relinked is
# tried again for up to ten seconds); exits naming PROG when one cannot be
# copied.
copy_tools() {
	local prog=$1 from=$2 to=$3 t try
	shift 3
	mkdir -p "$to"
	for t in "$@"; do
		for try in 1 2 3 4 5; do
			cp "$from/$t" "$to/$t" 2>/dev/null && "$to/$t" --help >/dev/null 2>&1 && break
			sleep 2
		done
		[ -x "$to/$t" ] || { echo "$prog: cannot copy $from/$t" >&2; exit 1; }
	done
}

# The median_ms=X of the last line of an ir-run --bench log, or nothing.
median() {
	sed -n 's/^median_ms=\([0-9.]*\)$/\1/p' "$1" | tail -n 1
}

# The smaller of two numbers (the second may be empty).
lower() {
	if [ -z "$2" ]; then echo "$1"; else awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; fi
}
