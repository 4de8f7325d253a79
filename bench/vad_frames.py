#!/usr/bin/python3
# vad_frames.py - utterances and per-frame inputs for a voice-activity model
# run frame by frame (bench/silero-vad.sh).
#
#   vad_frames.py utterance OUT.npy SEED TEXT...
#       16 kHz mono float32 speech of each TEXT (espeak-ng, resampled by
#       sox) with silences between and around, over low white noise and
#       one louder noise burst; SEED picks the voice, lengths and noise.
#   vad_frames.py frames MODEL.onnx UTT.npy OUT.npz [FRAME [RATE]]
#       The utterance cut into frames of FRAME samples (512; 256 at a RATE
#       of 8000, the utterance resampled to it first), as the model's
#       reference caller feeds them: a model with one state input (Silero
#       v5 and later) takes each frame after the last 64 samples of the one
#       before (32 at 8 kHz; zeros before the first), a model with h and c
#       inputs (Silero v4) the frame alone.  OUT.npz holds every graph input
#       of the model: framed inputs stacked on a first axis [N, 1, len], the
#       integer scalar input (the sample rate, RATE: 16000) too, as [N];
#       state inputs zero, of the model's shape with batch 1.  It is the -i
#       of `ir-run/tpu-sim --frames N --state ...` and of vad_ort.js.
#   vad_frames.py calib FRAMES.npz REF.npz OUT.npz [STEP]
#       Calibration samples for a stateful model: every STEP-th frame (1)
#       of FRAMES.npz with the state the float model had there (REF.npz,
#       the per-frame outputs of a run over the same frames), so that the
#       int8 scales see the states the model meets while running.
#   vad_frames.py ort MODEL.onnx FRAMES.npz N OUT=IN[,...] OUT.npz
#       The reference: onnxruntime (vad_ort.js) over the N frames of
#       FRAMES.npz with the state fed back, every output of every frame
#       stacked as ir-run --frames writes them.
#   vad_frames.py compare OUT.npz REF.npz [TOL]
#       Per-frame outputs against the reference: the largest absolute error
#       of each output over all frames, and the frames whose decision
#       (first output > 0.5) differs.  Exit 1 when an error passes TOL
#       (default: none checked) or a decision differs.
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

RATE = 16000
CONTEXT = 64


def speak(text, voice, speed, path):
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", path + ".raw.wav", text],
                   check=True)
    subprocess.run(["sox", "-D", path + ".raw.wav", "-r", str(RATE), "-c", "1", "-b", "16", path],
                   check=True)
    os.unlink(path + ".raw.wav")
    raw = open(path, "rb").read()
    # a canonical 44-byte header from sox; find the data chunk to be safe
    i = raw.index(b"data") + 8
    return np.frombuffer(raw[i:], "<i2").astype(np.float32) / 32768.0


def utterance(out, seed, texts):
    rng = np.random.default_rng(seed)
    voices = ["en", "en-us", "en+f3", "en+m3", "en-gb"]
    parts = [np.zeros(int(RATE * rng.uniform(0.4, 0.9)), np.float32)]
    with tempfile.TemporaryDirectory() as d:
        for k, t in enumerate(texts):
            s = speak(t, voices[rng.integers(len(voices))], int(rng.integers(140, 190)),
                      os.path.join(d, "%d.wav" % k))
            parts.append(s * rng.uniform(0.5, 0.9))
            parts.append(np.zeros(int(RATE * rng.uniform(0.5, 1.2)), np.float32))
    x = np.concatenate(parts)
    x += rng.normal(0, 0.004, x.size).astype(np.float32)
    # one burst of louder noise in the last silence
    n = int(RATE * 0.25)
    at = x.size - n - int(RATE * 0.1)
    x[at:at + n] += rng.normal(0, 0.03, n).astype(np.float32)
    np.save(out, np.clip(x, -1, 1).astype(np.float32))


def dims(vi):
    return [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]


def frames(model, utt, out, frame, rate):
    g = onnx.load(model, load_external_data=False).graph
    x = np.load(utt).astype(np.float32)
    context = CONTEXT * rate // RATE
    if rate != RATE:
        from scipy.signal import resample_poly
        x = resample_poly(x, rate, RATE).astype(np.float32)
    n = x.size // frame
    x = x[:n * frame].reshape(n, frame)
    names = [i.name for i in g.input]
    state_in = [i for i in g.input if len(dims(i)) == 3]
    arrays = {}
    for i in g.input:
        d, et = dims(i), i.type.tensor_type.elem_type
        if i in state_in:
            arrays[i.name] = np.zeros([1 if v is None else v for v in d], np.float32)
        elif et == onnx.TensorProto.INT64 and not d:
            arrays[i.name] = np.full(n, rate, np.int64)
        elif len(d) == 2:
            if len(state_in) == 1:   # one state tensor: v5 and later take context
                ctx = np.concatenate([np.zeros((1, context), np.float32), x[:-1, -context:]])
                arrays[i.name] = np.concatenate([ctx, x], 1).reshape(n, 1, frame + context)
            else:
                arrays[i.name] = x.reshape(n, 1, frame)
        else:
            sys.exit("vad_frames.py: %s: input '%s' is neither audio, state nor rate" %
                     (model, i.name))
    np.savez(out, **arrays)
    print("%s: %d frames of %d samples (%s)" % (out, n, frame, ", ".join(names)))


def calib(frames_npz, ref_npz, out, step):
    f, r = np.load(frames_npz), np.load(ref_npz)
    state = [k for k in f.files if f[k].ndim == 3]   # not stacked: the states
    framed = [k for k in f.files if k not in state and f[k].ndim > 0]
    # the state outputs follow the state inputs in output order
    outs = [k for k in r.files if r[k].ndim == 4]
    if len(outs) != len(state):
        sys.exit("vad_frames.py: %s: %d state outputs for %d state inputs" %
                 (ref_npz, len(outs), len(state)))
    n = f[framed[0]].shape[0]
    pick = np.arange(0, n, step)
    arrays = {k: f[k][pick] for k in framed}
    for s, o in zip(state, outs):
        prev = np.concatenate([f[s][None], r[o][:-1]])   # state entering each frame
        arrays[s] = prev[pick]
    np.savez(out, **arrays)
    print("%s: %d samples" % (out, pick.size))


def ort(model, frames_npz, n, state, out):
    import json
    f = np.load(frames_npz)
    pairs = [p.split("=") for p in state.split(",")]
    states = [i for _, i in pairs]
    with tempfile.TemporaryDirectory() as d:
        inputs = []
        for k in f.files:
            a = f[k]
            framed = k not in states and a.ndim > 0
            a = a.astype(np.int64 if a.dtype.kind in "iu" else np.float32)
            a.tofile(os.path.join(d, k + ".bin"))
            inputs.append({"name": k, "dtype": "int64" if a.dtype == np.int64 else "float32",
                           "shape": list(a.shape[1:] if framed else a.shape), "framed": framed})
        json.dump({"frames": n, "state": pairs, "inputs": inputs}, open(os.path.join(d, "job.json"), "w"))
        subprocess.run(["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "vad_ort.js"),
                        model, d], check=True)
        meta = json.load(open(os.path.join(d, "out.json")))
        res = {}
        for k, o in enumerate(meta["outputs"]):
            res[o["name"]] = np.fromfile(os.path.join(d, "out_%d.bin" % k), np.float32).reshape(
                [n] + o["shape"])
    np.savez(out, **res)


def compare(out, ref, tol):
    a, b = np.load(out), np.load(ref)
    bad = 0
    for k in b.files:
        if k not in a.files or a[k].shape != b[k].shape:
            print("%s: %s %s, reference %s" % (k, "missing" if k not in a.files else "shape",
                                              a[k].shape if k in a.files else "", b[k].shape))
            bad = 1
            continue
        d = np.abs(a[k].astype(np.float64) - b[k]).reshape(b[k].shape[0], -1).max(1)
        print("%-8s max abs error %.3g (frame %d), mean over frames %.3g" %
              (k, d.max(), d.argmax(), d.mean()))
        bad |= tol is not None and d.max() > tol
    p, q = a[b.files[0]].ravel() > 0.5, b[b.files[0]].ravel() > 0.5
    diff = np.flatnonzero(p != q)
    print("decisions: %d of %d frames agree (%d speech); differ at %s" %
          (p.size - diff.size, p.size, q.sum(), list(diff[:20])))
    sys.exit(1 if bad or diff.size else 0)


def main():
    a = sys.argv[1:]
    if len(a) >= 4 and a[0] == "utterance":
        utterance(a[1], int(a[2]), a[3:])
    elif len(a) in (4, 5, 6) and a[0] == "frames":
        rate = int(a[5]) if len(a) == 6 else RATE
        frames(a[1], a[2], a[3], int(a[4]) if len(a) >= 5 else 512 * rate // RATE, rate)
    elif len(a) in (4, 5) and a[0] == "calib":
        calib(a[1], a[2], a[3], int(a[4]) if len(a) == 5 else 1)
    elif len(a) == 6 and a[0] == "ort":
        ort(a[1], a[2], int(a[3]), a[4], a[5])
    elif len(a) in (3, 4) and a[0] == "compare":
        compare(a[1], a[2], float(a[3]) if len(a) == 4 else None)
    else:
        sys.exit("usage: vad_frames.py utterance OUT.npy SEED TEXT... | "
                 "frames MODEL.onnx UTT.npy OUT.npz [FRAME [RATE]] | calib FRAMES.npz REF.npz OUT.npz [STEP] | "
                 "ort MODEL.onnx FRAMES.npz N OUT=IN[,...] OUT.npz | compare OUT.npz REF.npz [TOL]")


main()
