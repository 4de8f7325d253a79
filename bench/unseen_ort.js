// unseen_ort.js - onnxruntime's outputs for a model and an input set, for
// bench/unseen.sh (the reference every tpuc figure is judged against).
//
//   node unseen_ort.js MODEL.onnx DIR
//
// DIR holds one raw little-endian file per graph input, NAME.bin, with
// NAME.json giving {"shape": [...], "dtype": "float32|int64|int32|bool"}
// (written by bench/unseen.sh from input.npz); the outputs are written the
// same way into DIR/out/, with DIR/out/names.json listing them.  Session:
// graph optimisation disabled (the model as written), one thread.
// onnxruntime-node: $ORT_NODE, else bench/node_modules, tests/node_modules,
// /work/ort/node_modules.
'use strict';
const fs = require('fs');
const path = require('path');

function load_ort() {
	const c = [process.env.ORT_NODE, path.join(__dirname, 'node_modules', 'onnxruntime-node'),
		path.join(__dirname, '..', 'tests', 'node_modules', 'onnxruntime-node'),
		'/work/ort/node_modules/onnxruntime-node'];
	for (const p of c)
		if (p && fs.existsSync(p))
			return require(p);
	throw new Error('onnxruntime-node is not installed (set ORT_NODE)');
}

const TYPED = {
	float32: Float32Array, int64: BigInt64Array, int32: Int32Array, bool: Uint8Array,
	float64: Float64Array, int8: Int8Array, uint8: Uint8Array, float16: Uint16Array,
};

async function main() {
	const [model, dir] = process.argv.slice(2);
	if (!dir) {
		console.error('usage: node unseen_ort.js MODEL.onnx DIR');
		process.exit(2);
	}
	const ort = load_ort();
	const s = await ort.InferenceSession.create(model, {
		graphOptimizationLevel: 'disabled', intraOpNumThreads: 1, interOpNumThreads: 1,
	});
	const feeds = {};
	for (const n of s.inputNames) {
		const f = path.join(dir, n.replace(/[^A-Za-z0-9_.-]/g, '_'));
		const j = JSON.parse(fs.readFileSync(f + '.json'));
		const b = fs.readFileSync(f + '.bin');
		const T = TYPED[j.dtype];
		const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.length);
		const a = j.dtype === 'bool' ? new Uint8Array(ab) : new T(ab);
		feeds[n] = new ort.Tensor(j.dtype, j.dtype === 'bool' ? Array.from(a, (v) => !!v) : a, j.shape);
	}
	const r = await s.run(feeds);
	const od = path.join(dir, 'out');
	fs.mkdirSync(od, { recursive: true });
	s.outputNames.forEach((n, i) => {
		const t = r[n];
		let d = t.data;
		if (t.type === 'bool')
			d = Uint8Array.from(d, (v) => (v ? 1 : 0));
		fs.writeFileSync(path.join(od, `${i}.bin`), Buffer.from(d.buffer, d.byteOffset, d.byteLength));
		fs.writeFileSync(path.join(od, `${i}.json`), JSON.stringify({ shape: t.dims, dtype: t.type }));
	});
	fs.writeFileSync(path.join(od, 'names.json'), JSON.stringify(s.outputNames));
}

main().catch((e) => {
	console.error(`unseen_ort.js: ${e.message.split('\n')[0]}`);
	process.exit(1);
});
