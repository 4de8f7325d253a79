// ort_run.js - run an ONNX model on onnxruntime-node for the tests of
// pre-quantised models (tests/qmodels.bats through tests/qcompare.py).
//
//   node ort_run.js MODEL.onnx IN_DIR OUT_DIR
//
// IN_DIR holds one raw little-endian file per graph input, named
// <index>.bin, with <index>.json giving {"shape": [...], "dtype": ...}
// (onnxruntime's type names: float32 when absent, int64, float64, bool
// ...); the outputs are written the same way into OUT_DIR, and
// OUT_DIR/names.json lists the output names.  Session: graph optimisation
// 'all', one thread.
// onnxruntime-node is looked up in $ORT_NODE_MODULES, tests/node_modules, then
// bench/node_modules.
'use strict';
const fs = require('fs');
const path = require('path');

function load_ort() {
	const dirs = [path.join(__dirname, 'node_modules'), path.join(__dirname, '..', 'bench', 'node_modules')];
	if (process.env.ORT_NODE_MODULES)
		dirs.unshift(process.env.ORT_NODE_MODULES);
	for (const d of dirs) {
		const p = path.join(d, 'onnxruntime-node');
		if (fs.existsSync(p))
			return require(p);
	}
	throw new Error('onnxruntime-node is not installed ($ORT_NODE_MODULES, tests/node_modules, ' +
			'bench/node_modules)');
}

async function main() {
	const [model, ind, outd] = process.argv.slice(2);
	if (!outd) {
		console.error('usage: node ort_run.js MODEL.onnx IN_DIR OUT_DIR');
		process.exit(2);
	}
	const ort = load_ort();
	const s = await ort.InferenceSession.create(model, {
		graphOptimizationLevel: 'all', intraOpNumThreads: 1, interOpNumThreads: 1,
	});
	const feeds = {};
	s.inputNames.forEach((n, i) => {
		const info = JSON.parse(fs.readFileSync(path.join(ind, `${i}.json`)));
		const type = info.dtype || 'float32';
		const b = fs.readFileSync(path.join(ind, `${i}.bin`));
		const raw = b.buffer.slice(b.byteOffset, b.byteOffset + b.length);
		const arrays = { float32: Float32Array, float64: Float64Array, int64: BigInt64Array,
				 int32: Int32Array, int8: Int8Array, uint8: Uint8Array, bool: Uint8Array };
		feeds[n] = new ort.Tensor(type, new arrays[type](raw), info.shape);
	});
	const r = await s.run(feeds);
	fs.mkdirSync(outd, { recursive: true });
	s.outputNames.forEach((n, i) => {
		const t = r[n];
		fs.writeFileSync(path.join(outd, `${i}.bin`), Buffer.from(t.data.buffer, t.data.byteOffset,
									 t.data.byteLength));
		fs.writeFileSync(path.join(outd, `${i}.json`), JSON.stringify({ shape: t.dims, dtype: t.type }));
	});
	fs.writeFileSync(path.join(outd, 'names.json'), JSON.stringify(s.outputNames));
}

main().catch((e) => {
	console.error(`ort_run.js: ${e.message}`);
	process.exit(1);
});
