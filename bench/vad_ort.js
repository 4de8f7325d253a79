// vad_ort.js - run an ONNX model on onnxruntime-node frame by frame, state
// fed back, as `ir-run --frames N --state OUT=IN` runs it (the reference of
// bench/silero-vad.sh; vad_frames.py ort writes its input and reads its
// output).
//
//   node vad_ort.js MODEL.onnx DIR
//
// DIR/job.json: {"frames": N, "state": [[OUT, IN], ...], "inputs": [{"name",
// "dtype" ("float32" | "int64"), "shape", "framed"}]}, with each input's data
// in DIR/<name>.bin (raw little-endian; a framed input holds N frames of
// its shape).  Writes DIR/out.json {"outputs": [{"name", "shape"}]} and
// DIR/out_<k>.bin: output k of every frame, float32, frames first.
// Session: graph optimisation 'all', one thread.  onnxruntime-node is looked
// up in bench/node_modules, tests/node_modules, then $ORT_NODE.
'use strict';
const fs = require('fs');
const path = require('path');

function load_ort() {
	const dirs = [path.join(__dirname, 'node_modules'), path.join(__dirname, '..', 'tests', 'node_modules')];
	if (process.env.ORT_NODE)
		dirs.push(process.env.ORT_NODE);
	for (const d of dirs) {
		const p = path.join(d, 'onnxruntime-node');
		if (fs.existsSync(p))
			return require(p);
	}
	throw new Error('onnxruntime-node is not installed (bench/node_modules, tests/node_modules, $ORT_NODE)');
}

function typed(dtype, buf) {
	const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length);
	return dtype === 'int64' ? new BigInt64Array(ab) : new Float32Array(ab);
}

async function main() {
	const [model, dir] = process.argv.slice(2);
	if (!dir) {
		console.error('usage: node vad_ort.js MODEL.onnx DIR');
		process.exit(2);
	}
	const ort = load_ort();
	const job = JSON.parse(fs.readFileSync(path.join(dir, 'job.json')));
	const s = await ort.InferenceSession.create(model, {
		graphOptimizationLevel: 'all', intraOpNumThreads: 1, interOpNumThreads: 1,
	});
	const data = {};
	for (const i of job.inputs)
		data[i.name] = typed(i.dtype, fs.readFileSync(path.join(dir, `${i.name}.bin`)));
	const feeds = {};
	for (const i of job.inputs)
		if (!i.framed)
			feeds[i.name] = new ort.Tensor(i.dtype, data[i.name], i.shape);
	const chunks = s.outputNames.map(() => []);
	let shapes = null;
	for (let f = 0; f < job.frames; f++) {
		for (const i of job.inputs) {
			if (!i.framed)
				continue;
			const n = i.shape.reduce((a, b) => a * b, 1);
			feeds[i.name] = new ort.Tensor(i.dtype, data[i.name].slice(f * n, (f + 1) * n), i.shape);
		}
		const r = await s.run(feeds);
		shapes = s.outputNames.map((n) => r[n].dims);
		s.outputNames.forEach((n, k) => chunks[k].push(Buffer.from(Float32Array.from(r[n].data).buffer)));
		for (const [o, i] of job.state)
			feeds[i] = new ort.Tensor('float32', Float32Array.from(r[o].data), r[o].dims);
	}
	s.outputNames.forEach((n, k) => fs.writeFileSync(path.join(dir, `out_${k}.bin`), Buffer.concat(chunks[k])));
	fs.writeFileSync(path.join(dir, 'out.json'), JSON.stringify({
		outputs: s.outputNames.map((n, k) => ({ name: n, shape: shapes[k] })),
	}));
}

main().catch((e) => {
	console.error(`vad_ort.js: ${e.message}`);
	process.exit(1);
});
