// ort_run.js - run an ONNX model on onnxruntime-node for the tests of
// pre-quantised models (tests/qmodels.bats through tests/qcompare.py).
//
//   node ort_run.js MODEL.onnx IN_DIR OUT_DIR
//
// IN_DIR holds one raw little-endian f32 file per graph input, named
// <index>.bin, with <index>.json giving {"shape": [...]}; the outputs are
// written the same way into OUT_DIR, and OUT_DIR/names.json lists the
// output names.  Session: graph optimisation 'all', one thread.
// onnxruntime-node is looked up in tests/node_modules, then bench/node_modules.
'use strict';
const fs = require('fs');
const path = require('path');

function load_ort() {
	for (const d of ['node_modules', path.join('..', 'bench', 'node_modules')]) {
		const p = path.join(__dirname, d, 'onnxruntime-node');
		if (fs.existsSync(p))
			return require(p);
	}
	throw new Error('onnxruntime-node is not installed (tests/node_modules, bench/node_modules)');
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
		const shape = JSON.parse(fs.readFileSync(path.join(ind, `${i}.json`))).shape;
		const b = fs.readFileSync(path.join(ind, `${i}.bin`));
		const a = new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
		feeds[n] = new ort.Tensor('float32', a, shape);
	});
	const r = await s.run(feeds);
	fs.mkdirSync(outd, { recursive: true });
	s.outputNames.forEach((n, i) => {
		const t = r[n];
		fs.writeFileSync(path.join(outd, `${i}.bin`), Buffer.from(t.data.buffer, t.data.byteOffset,
									 t.data.byteLength));
		fs.writeFileSync(path.join(outd, `${i}.json`), JSON.stringify({ shape: t.dims }));
	});
	fs.writeFileSync(path.join(outd, 'names.json'), JSON.stringify(s.outputNames));
}

main().catch((e) => {
	console.error(`ort_run.js: ${e.message}`);
	process.exit(1);
});
