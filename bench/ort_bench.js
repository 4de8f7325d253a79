// ort_bench.js - time one ONNX model on onnxruntime-node the way
// `ir-run --bench N` times it: same inputs, warm-up runs, then N timed
// runs in-process; the last line printed is median_ms=X.
//
//   node ort_bench.js MODEL.onnx INPUT.npz THREADS RUNS
//
// Session: graphOptimizationLevel 'all', intraOpNumThreads THREADS,
// interOpNumThreads 1, sequential execution.  INPUT.npz is read by the
// small npz reader below (stored or deflated members, zip64 sizes, npy
// format 1-3, C order).
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));

const WARMUP = 3;

// The members of a zip archive as {name: Buffer}, walking local headers.
function unzip(buf) {
	const out = {};
	let p = 0;
	while (p + 30 <= buf.length && buf.readUInt32LE(p) === 0x04034b50) {
		const flags = buf.readUInt16LE(p + 6), method = buf.readUInt16LE(p + 8);
		let csize = buf.readUInt32LE(p + 18), usize = buf.readUInt32LE(p + 22);
		const nlen = buf.readUInt16LE(p + 26), xlen = buf.readUInt16LE(p + 28);
		const name = buf.toString('utf8', p + 30, p + 30 + nlen);
		// zip64 extra field (id 1): uncompressed then compressed size
		for (let x = p + 30 + nlen; x + 4 <= p + 30 + nlen + xlen;) {
			const id = buf.readUInt16LE(x), len = buf.readUInt16LE(x + 2);
			if (id === 1) {
				let q = x + 4;
				if (usize === 0xffffffff) { usize = Number(buf.readBigUInt64LE(q)); q += 8; }
				if (csize === 0xffffffff) csize = Number(buf.readBigUInt64LE(q));
			}
			x += 4 + len;
		}
		if (flags & 8)
			throw new Error(`${name}: zip data descriptors are not supported`);
		const start = p + 30 + nlen + xlen, data = buf.subarray(start, start + csize);
		if (method === 0) out[name] = data;
		else if (method === 8) out[name] = zlib.inflateRawSync(data);
		else throw new Error(`${name}: zip method ${method} is not supported`);
		p = start + csize;
	}
	return out;
}

const DTYPES = {
	'<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
	'<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
	'|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array],
	'|b1': ['bool', Uint8Array],
};

// One .npy member as an ort.Tensor.
function npy(buf, name) {
	if (buf.toString('latin1', 0, 6) !== '\x93NUMPY')
		throw new Error(`${name}: not an npy member`);
	const major = buf[6];
	const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
	const hoff = major === 1 ? 10 : 12;
	const h = buf.toString('latin1', hoff, hoff + hlen);
	const descr = /'descr':\s*'([^']+)'/.exec(h)[1];
	if (/'fortran_order':\s*True/.test(h))
		throw new Error(`${name}: Fortran order is not supported`);
	const shape = /'shape':\s*\(([^)]*)\)/.exec(h)[1].split(',')
		.map((s) => s.trim()).filter((s) => s).map(Number);
	const dt = DTYPES[descr];
	if (!dt)
		throw new Error(`${name}: dtype ${descr} is not supported`);
	const raw = buf.subarray(hoff + hlen);
	const copy = new Uint8Array(raw.length);   // aligned for the typed array
	copy.set(raw);
	const arr = new dt[1](copy.buffer, 0, raw.length / dt[1].BYTES_PER_ELEMENT);
	return new ort.Tensor(dt[0], dt[0] === 'bool' ? Array.from(arr, Boolean) : arr, shape);
}

function readNpz(file) {
	const m = unzip(fs.readFileSync(file)), out = {};
	for (const k of Object.keys(m))
		out[k.replace(/\.npy$/, '')] = npy(m[k], k);
	return out;
}

async function main() {
	const [model, input, threads, runs] = process.argv.slice(2);
	if (!runs) {
		console.error('usage: node ort_bench.js MODEL.onnx INPUT.npz THREADS RUNS');
		process.exit(2);
	}
	const s = await ort.InferenceSession.create(model, {
		graphOptimizationLevel: 'all',
		intraOpNumThreads: Number(threads),
		interOpNumThreads: 1,
		executionMode: 'sequential',
	});
	const all = readNpz(input), feeds = {};
	for (const n of s.inputNames) {
		if (!all[n])
			throw new Error(`${input}: no array for graph input '${n}'`);
		feeds[n] = all[n];
	}
	for (let i = 0; i < WARMUP; i++)
		await s.run(feeds);
	const t = [];
	for (let i = 0; i < Number(runs); i++) {
		const t0 = process.hrtime.bigint();
		await s.run(feeds);
		t.push(Number(process.hrtime.bigint() - t0) / 1e6);
	}
	t.sort((a, b) => a - b);
	const n = t.length, med = n % 2 ? t[(n - 1) / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	console.log(`ort: ${n} runs after ${WARMUP} warm-up, ${threads} thread(s): ` +
		`min ${t[0].toFixed(3)} ms, median ${med.toFixed(3)} ms, max ${t[n - 1].toFixed(3)} ms`);
	console.log(`median_ms=${med.toFixed(3)}`);
}

main().catch((e) => {
	console.error(`ort_bench: ${e.message}`);
	process.exit(1);
});
