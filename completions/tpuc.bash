# tpuc.bash - bash completion for the tpuc tools.  Installed under
# share/bash-completion/completions/ once per tool name, where
# bash-completion loads it on first use; or source it yourself.
# Options come from each tool's --help; files are offered by what the tool
# or the option reads.

_tpuc_files() {
	# _tpuc_files GLOB: files matching GLOB, and directories
	local IFS=$'\n'
	COMPREPLY=($(compgen -f -X "!$1" -- "$cur") $(compgen -d -- "$cur"))
	compopt -o filenames 2>/dev/null
}

_tpuc() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmd=${COMP_WORDS[0]##*/}
	case $prev in
	-o|--output|-l|--table|--calib|--qtable)
		_tpuc_files '*'; return ;;
	-i|--input|-d)
		_tpuc_files '*.npz'; return ;;
	--chip)
		COMPREPLY=($(compgen -W 'tpu-a tpu-b' -- "$cur")); return ;;
	--mode|--search-mode)
		COMPREPLY=($(compgen -W 'f32 bf16 f16 int8' -- "$cur")); return ;;
	--method)
		COMPREPLY=($(compgen -W 'kld minmax percentile mse' -- "$cur")); return ;;
	esac
	if [[ $cur == -* ]]; then
		local opts
		opts=$("${COMP_WORDS[0]}" --help 2>/dev/null |
			grep -oE -- '(^|[ [])--?[a-zA-Z][-a-zA-Z0-9]*' | tr -d ' [')
		COMPREPLY=($(compgen -W "$opts --help --version" -- "$cur"))
		return
	fi
	case $cmd in
	onnx2top) _tpuc_files '*.onnx' ;;
	tpu-sim|tmodel-info) _tpuc_files '*.tmodel' ;;
	npz-compare) _tpuc_files '*.npz' ;;
	*) _tpuc_files '*.@(top|tpu)' ;;
	esac
}

complete -F _tpuc onnx2top top-opt calibrate top2tpu weight-reorder layergroup \
	addr-assign codegen tpu-sim npz-compare ir-run ir-print tmodel-info ir-cut
