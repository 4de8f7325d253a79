#!/usr/bin/env bats
# npz-compare: metrics, tolerance, errors, and .npz interop with numpy both
# ways (the writer side through build/unit/test_npz --write).
load helpers

bats_require_minimum_version 1.5.0

MODELS=/work/shared/models/resnet18

setup() {
	T=$BATS_TEST_TMPDIR
	UNIT=$BATS_TEST_DIRNAME/../${B:-build}/unit/test_npz
}

# Run Python with numpy as np and the test directory as the cwd.
py() {
	(cd "$T" && $PY -c "import numpy as np, zipfile, io
$1")
}

# a.npz (stored) and ac.npz (deflated): same tensors; the names need
# escaping nowhere.
make_pair() {
	py "
r = np.random.default_rng(0)
x = r.standard_normal((2, 3, 4)).astype(np.float32)
d = {'/layer1/Conv_output_0': x, 'out:0': x[0] * 2, 'ids': np.arange(5)}
np.savez('a.npz', **d)
np.savez_compressed('ac.npz', **d)"
}

@test "identical stored files pass" {
	make_pair
	run --separate-stderr npz-compare "$T/a.npz" "$T/a.npz"
	assert_success
	assert_line --index 0 --regexp '^name +shape +cosine +euclid +sqnr +result$'
	assert_line --index 1 --regexp '^/layer1/Conv_output_0 +\[2,3,4\] +1\.000000 +1\.000000 +inf +PASS$'
	assert_line --index 2 --regexp '^out:0 +\[3,4\] .* PASS$'
	assert_line --index 3 --regexp '^ids +\[5\] .* PASS$'
	[ "$stderr" = "npz-compare: 3 compared, 0 failed" ]
}

@test "np.savez (zip64, stored) against np.savez_compressed (deflate) passes" {
	make_pair
	# numpy writes a zip64 extra field (id 0x0001) in each local header.
	py "
import struct
for f in ('a.npz', 'ac.npz'):
    b = open(f, 'rb').read(200)
    n, e = struct.unpack('<HH', b[26:30])
    assert e >= 4 and b[30 + n:32 + n] == b'\x01\x00', f
assert zipfile.ZipFile('ac.npz').infolist()[0].compress_type == zipfile.ZIP_DEFLATED"
	run npz-compare "$T/a.npz" "$T/ac.npz"
	assert_success
	run npz-compare "$T/ac.npz" "$T/a.npz"
	assert_success
}

@test "a perturbed tensor fails and is named" {
	make_pair
	py "
d = dict(np.load('a.npz'))
d['out:0'] = d['out:0'] + np.float32(5)
np.savez('b.npz', **d)"
	run --separate-stderr npz-compare "$T/a.npz" "$T/b.npz"
	assert_failure 1
	assert_line --index 1 --regexp 'PASS$'
	assert_line --index 2 --regexp '^out:0 .* FAIL  cosine 0\.[0-9]{6} < 0\.99$'
	[[ "$stderr" =~ ^"npz-compare: 3 compared, 1 failed; first failure 'out:0' (cosine 0."[0-9]+" < 0.99)"$ ]]
}

# a = [1,0,0,0], b = [1,1,0,0]: cosine 1/sqrt(2), euclid 1 - 1/(sqrt(5)/2),
# sqnr 10 log10(1/1) = 0.
make_known() {
	py "
np.savez('k1.npz', v=np.array([1, 0, 0, 0], np.float32))
np.savez('k2.npz', v=np.array([1, 1, 0, 0], np.float32))"
}

@test "metrics have the documented values" {
	make_known
	run npz-compare "$T/k1.npz" "$T/k2.npz" --tolerance 0.7,0.1
	assert_success
	assert_line --index 1 --regexp '^v +\[4\] +0\.707107 +0\.105573 +0\.00 +PASS$'
}

@test "--tolerance sets both thresholds, either spelling" {
	make_known
	run --separate-stderr npz-compare --tolerance=0.8,0.1 "$T/k1.npz" "$T/k2.npz"
	assert_failure 1
	[ "$stderr" = "npz-compare: 1 compared, 1 failed; first failure 'v' (cosine 0.707106 < 0.8)" ]
	run --separate-stderr npz-compare "$T/k1.npz" "$T/k2.npz" --tolerance 0.7,0.2
	assert_failure 1
	[ "$stderr" = "npz-compare: 1 compared, 1 failed; first failure 'v' (euclid 0.105572 < 0.2)" ]
	run npz-compare "$T/k1.npz" "$T/k2.npz" --tolerance -1,-1e9
	assert_success
}

@test "a bad --tolerance value is a usage error" {
	make_known
	for t in abc 0.9, ,0.9 1.5,0.9 1.5 0.9,1.01 0.9,0.9,0.9 nan,0.9 0.9x,0.9; do
		run npz-compare "$T/k1.npz" "$T/k2.npz" --tolerance "$t"
		assert_failure 2
		assert_output "npz-compare: bad --tolerance '$t': expected COS or COS,EUC, numbers of at most 1"
	done
	run npz-compare "$T/k1.npz" "$T/k2.npz" --tolerance
	assert_failure 2
	assert_line --index 0 "npz-compare: option '--tolerance' needs a value"
}

@test "bad option or argument count is a usage error" {
	make_known
	run npz-compare --bogus "$T/k1.npz" "$T/k2.npz"
	assert_failure 2
	assert_line --index 0 "npz-compare: unknown option '--bogus'"
	assert_line --index 1 --partial "usage: npz-compare A.npz B.npz"
	run npz-compare -x "$T/k1.npz" "$T/k2.npz"
	assert_failure 2
	assert_line --index 0 "npz-compare: unknown option '-x'"
	run npz-compare "$T/k1.npz"
	assert_failure 2
	assert_output --partial "usage: npz-compare"
	run npz-compare "$T/k1.npz" "$T/k2.npz" "$T/k2.npz"
	assert_failure 2
	run npz-compare --help
	assert_success
	assert_output --partial "usage: npz-compare"
}

@test "a missing file gives one line naming it" {
	make_known
	run npz-compare "$T/k1.npz" "$T/nope.npz"
	assert_failure 1
	assert_output "npz-compare: cannot open '$T/nope.npz': No such file or directory"
}

@test "a truncated npz gives one clear line" {
	make_pair
	head -c 300 "$T/a.npz" > "$T/cut.npz"
	run npz-compare "$T/cut.npz" "$T/a.npz"
	assert_failure 1
	assert_output "npz-compare: '$T/cut.npz': not a valid zip archive (truncated or not an npz file)"
}

@test "a corrupt deflated member names the file and the member" {
	make_pair
	py "
b = bytearray(open('ac.npz', 'rb').read())
b[200] ^= 0xff
open('bad.npz', 'wb').write(b)"
	run npz-compare "$T/bad.npz" "$T/a.npz"
	assert_failure 1
	assert_output --regexp "^npz-compare: '$T/bad.npz': member '[^']+\.npy': [A-Za-z]"
	[ "${#lines[@]}" -eq 1 ]
}

@test "every numeric dtype numpy writes reads as its value; other dtypes are skipped, named" {
	py "
def member(name, arr):
    buf = io.BytesIO(); np.lib.format.write_array(buf, arr)
    with zipfile.ZipFile(name + '.npz', 'w') as z: z.writestr('t/x.npy', buf.getvalue())
x = np.array([[0.5, -1.25, 3], [7, 0, 1e-3]])
member('f4', x.astype(np.float32))
member('f8', x)
member('be', x.astype('>f4'))
member('bef8', x.astype('>f8'))
member('fort', np.asfortranarray(x.astype(np.float32)))
v = np.array([[0, 1, 2], [65535, 7, 9]])
member('i64', v.astype(np.int64))
for t in ('u2', 'u4', 'u8', '>u2', '>i4', 'i4'): member(t.replace('>', 'be'), v.astype(t))
member('bool', np.array([True, False, True]))
member('bool_i1', np.array([1, 0, 1], np.int8))
member('cplx', np.ones(3, np.complex64))
member('str', np.array(['a', 'b']))"
	for f in f8 be bef8 fort; do
		run npz-compare -v "$T/f4.npz" "$T/$f.npz" --tolerance 1,1
		assert_success
		# f64 stays f64 (ir-run computes in it), compared by value
		assert_line --regexp "^    A f32 \[2,3\], B f(32|64) \[2,3\]; max \|a-b\| 0 at element 0$"
	done
	run npz-compare -v "$T/f4.npz" "$T/bef8.npz" --tolerance 1,1
	assert_line --partial "B f64 [2,3]"
	for f in u2 u4 u8 beu2 bei4 i4; do
		run npz-compare -v "$T/i64.npz" "$T/$f.npz" --tolerance 1,1
		assert_success
		assert_line --regexp "^    A i64 \[2,3\], B [iu](16|32|64) \[2,3\]; max \|a-b\| 0 at element 0$"
	done
	run npz-compare "$T/bool.npz" "$T/bool_i1.npz" --tolerance 1,1
	assert_success
	run npz-compare "$T/cplx.npz" "$T/f4.npz"
	assert_failure 1
	assert_line "skipped in A: t/x (unsupported dtype '<c8')"
	run npz-compare "$T/f4.npz" "$T/str.npz"
	assert_failure 1
	assert_line "skipped in B: t/x (unsupported dtype '<U1')"
}

@test ".npy format versions 1.0, 2.0 and 3.0 all read" {
	py "
x = np.arange(12, dtype=np.float32).reshape(3, 4)
with zipfile.ZipFile('v.npz', 'w') as z:
    for v in ((1, 0), (2, 0), (3, 0)):
        buf = io.BytesIO(); np.lib.format.write_array(buf, x, version=v)
        z.writestr('v%d.npy' % v[0], buf.getvalue())
np.savez('w.npz', v1=x, v2=x, v3=x)"
	run npz-compare "$T/v.npz" "$T/w.npz"
	assert_success
	assert_line --index 3 --regexp '^v3 +\[3,4\] .* PASS$'
}

@test "element counts that differ fail; equal counts in another shape compare" {
	py "
np.savez('s1.npz', a=np.ones((2, 3), np.float32), b=np.ones(6, np.float32))
np.savez('s2.npz', a=np.ones(7, np.float32), b=np.ones((3, 2), np.float32))"
	run --separate-stderr npz-compare "$T/s1.npz" "$T/s2.npz"
	assert_failure 1
	assert_line --index 1 --regexp '^a +\[2,3\] +- +- +- +FAIL  element count 6 vs 7$'
	assert_line --index 2 --regexp '^b +\[6\] .* PASS  B has shape \[3,2\]$'
	[ "$stderr" = "npz-compare: 2 compared, 1 failed; first failure 'a' (element count 6 vs 7)" ]
}

@test "tensors in one file only are listed, not failed" {
	py "
np.savez('o1.npz', x=np.ones(2, np.float32), onlya=np.zeros(3, np.int8))
np.savez('o2.npz', onlyb=np.zeros((1, 2), np.float16), x=np.ones(2, np.float32))"
	run --separate-stderr npz-compare "$T/o1.npz" "$T/o2.npz"
	assert_success
	assert_line --index 1 --regexp '^x .* PASS$'
	assert_line --index 2 "only in A: onlya [3]"
	assert_line --index 3 "only in B: onlyb [1,2]"
	[ "$stderr" = "npz-compare: 1 compared, 0 failed" ]
}

@test "no tensor in common is a failure" {
	py "
np.savez('n1.npz', x=np.ones(2, np.float32))
np.savez('n2.npz', y=np.ones(2, np.float32))
np.savez('n3.npz')"
	run --separate-stderr npz-compare "$T/n1.npz" "$T/n2.npz"
	assert_failure 1
	assert_output $'only in A: x [2]\nonly in B: y [2]'
	[ "$stderr" = "npz-compare: no tensor in common between '$T/n1.npz' and '$T/n2.npz'" ]
	run --separate-stderr npz-compare "$T/n3.npz" "$T/n3.npz"
	assert_failure 1
	[ "$stderr" = "npz-compare: no tensor in common between '$T/n3.npz' and '$T/n3.npz'" ]
}

@test "integer tensors compare as numbers, also across dtypes" {
	py "
np.savez('i1.npz', q=np.array([-128, 5, 127], np.int8), r=np.array([1, 2, 3], np.int32),
         m=np.array([True, False]), h=np.array([0.5, -2], np.float16))
np.savez('i2.npz', q=np.array([-128, 5, 127], np.int16), r=np.array([1, 2, 3], np.float32),
         m=np.array([1, 0], np.uint8), h=np.array([0.5, -2], np.float32))
np.savez('i3.npz', q=np.array([-128, 6, 120], np.int8))"
	run npz-compare "$T/i1.npz" "$T/i2.npz"
	assert_success
	run npz-compare "$T/i1.npz" "$T/i3.npz" -v
	assert_success
	assert_line --index 1 --regexp '^q +\[3\] +0\.99[0-9]+ +0\.9[0-9]+ .* PASS$'
	assert_line --index 2 "    A i8 [3], B i8 [3]; max |a-b| 7 at element 2"
}

@test "NaN fails, all zeros pass, one side all zeros fails" {
	py "
np.savez('z1.npz', n=np.array([1, 2], np.float32), z=np.zeros(4, np.float32), o=np.zeros(2, np.float32))
np.savez('z2.npz', n=np.array([1, np.nan], np.float32), z=np.zeros(4, np.float32), o=np.ones(2, np.float32))"
	run --separate-stderr npz-compare "$T/z1.npz" "$T/z2.npz"
	assert_failure 1
	assert_line --index 1 --regexp '^n +\[2\] +nan +nan +nan +FAIL  NaN in B$'
	assert_line --index 2 --regexp '^z +\[4\] +1\.000000 +1\.000000 +inf +PASS$'
	assert_line --index 3 --regexp '^o +\[2\] +0\.000000 .* FAIL  cosine 0\.000000 < 0\.99$'
	[ "$stderr" = "npz-compare: 3 compared, 2 failed; first failure 'n' (NaN in B)" ]
}

@test "A may be read from standard input" {
	make_pair
	run npz-compare - "$T/ac.npz" < "$T/a.npz"
	assert_success
}

@test "numpy reads what the library writes, stored, deflated and to stdout" {
	[ -x "$UNIT" ] || skip "build/unit/test_npz not built"
	"$UNIT" --write "$T/ours.npz"
	"$UNIT" --write "$T/oursc.npz" --compress
	"$UNIT" --write - > "$T/ourso.npz"
	cmp "$T/ours.npz" "$T/ourso.npz"
	py "
for f, method in (('ours.npz', zipfile.ZIP_STORED), ('oursc.npz', zipfile.ZIP_DEFLATED)):
    assert all(i.compress_type == method and i.date_time == (1980, 1, 1, 0, 0, 0)
               for i in zipfile.ZipFile(f).infolist()), f
    z = np.load(f)
    assert z.files == ['f32', 'f16', 'i8', 'u8', 'i16', 'i32', 'i64', 'bool',
                       'scalar', 'empty', '/layer1/Conv_output_0:0.x'], z.files
    assert z['f32'].dtype == np.float32 and (z['f32'] == np.arange(6).reshape(2, 3) * 0.5 - 1).all()
    assert z['f16'].dtype == np.float16 and z['f16'].tolist() == [1, -2, 65504]
    assert z['i8'].dtype == np.int8 and z['i8'].tolist() == [-128, -1, 0, 127]
    assert z['u8'].dtype == np.uint8 and z['u8'].tolist() == [0, 128, 255]
    assert z['i16'].dtype == np.int16 and z['i16'].tolist() == [-32768, 32767]
    assert z['i32'].dtype == np.int32 and z['i32'].tolist() == [-2**31, 7]
    assert z['i64'].dtype == np.int64 and z['i64'].tolist() == [-2**63, 1234567890123]
    assert z['bool'].dtype == np.bool_ and z['bool'].tolist() == [True, False, True]
    assert z['scalar'].shape == () and z['scalar'] == 3.5
    assert z['empty'].shape == (0, 3) and z['empty'].dtype == np.float32
    assert z['/layer1/Conv_output_0:0.x'].tolist() == [[[5, 6]]]
    np.savez('np_' + f, **dict(z))"
	run npz-compare "$T/ours.npz" "$T/np_ours.npz"
	assert_success
	run npz-compare "$T/np_oursc.npz" "$T/oursc.npz"
	assert_success
}

@test "resnet18 input.npz (stored, zip64) and calib.npz (deflate) read" {
	[ -z "$QUICK" ] || skip "real model files (QUICK set)"
	[ -r "$MODELS/calib.npz" ] || skip "$MODELS not present"
	run --separate-stderr npz-compare "$MODELS/input.npz" "$MODELS/input.npz"
	assert_success
	assert_line --index 1 --regexp '^input +\[1,3,224,224\] +1\.000000 +1\.000000 +inf +PASS$'
	run --separate-stderr npz-compare "$MODELS/calib.npz" "$MODELS/calib.npz"
	assert_success
	assert_line --index 1 --regexp '^input +\[32,3,224,224\] +1\.000000 +1\.000000 +inf +PASS$'
	# Cross-check the contents against numpy through a copy numpy writes.
	py "
z = np.load('$MODELS/calib.npz')['input']
assert z.shape == (32, 3, 224, 224) and z.dtype == np.float32
np.savez('calib_np.npz', input=z)"
	run npz-compare "$MODELS/calib.npz" "$T/calib_np.npz"
	assert_success
	assert_line --index 1 --partial " inf  PASS"
}

@test "--task: top-1/top-5, CTC text, map agreement and a probability's error and decision" {
	$PY -c "
import numpy as np
r = np.random.default_rng(0)
c = r.standard_normal((1, 1000)).astype(np.float32)
tie = c.copy(); i = int(np.argmax(c)); tie[0, (i + 1) % 1000] = c[0, i] - 1e-4
eye = np.eye(6, dtype=np.float32)
a = dict(cls=c, tie=tie, p=np.array([[0.3]], np.float32),
         ctc=eye[[0, 1, 1, 0, 2, 3, 3, 0]][None], m=r.uniform(0, 1, (1, 1, 16, 16)).astype(np.float32),
         seg=eye[:3, :3][r.integers(0, 3, (8, 8))].transpose(2, 0, 1)[None].copy(),
         feat=r.standard_normal((1, 4, 8, 8)).astype(np.float32))
np.savez('$T/a.npz', **a)
# small changes a task does not see: CTC repeats merge, a tie swaps
b = dict(a); ctc = a['ctc'].copy(); ctc[0, 3] = eye[1]; b['ctc'] = ctc
t2 = tie.copy(); t2[0, (i + 1) % 1000] = c[0, i] + 1e-4; b['tie'] = t2
b['p'] = np.array([[0.31]], np.float32)
np.savez('$T/ok.npz', **b)
# changes it does see
c2 = c.copy(); c2[0, 3] = c.max() + 1
m = a['m'].copy(); m[0, 0, :4] = 1 - m[0, 0, :4]
ctc = a['ctc'].copy(); ctc[0, 4] = eye[4]
seg = a['seg'][:, [1, 2, 0]].copy()
np.savez('$T/bad.npz', cls=c2, tie=tie, p=np.array([[0.51]], np.float32), ctc=ctc, m=m, seg=seg,
         feat=a['feat'])
np.savez('$T/p.npz', p=np.array([[0.001]], np.float32)); np.savez('$T/z.npz', p=np.array([[0.0]], np.float32))"
	run npz-compare "$T/a.npz" "$T/ok.npz" --task auto --tolerance 0.5,-10
	assert_success
	assert_line --regexp '^    task class: top-1 [0-9]+ = [0-9]+, top-5 5/5: PASS$'
	assert_line --regexp '^    task class: top-1 ([0-9]+) != [0-9]+ \(a tie in A\), top-5 5/5: PASS$'
	assert_line '    task ctc: CTC text equal (3 labels): PASS'
	assert_line --regexp '^    task score: \|a-b\| 0\.01 .*same side of 0\.5: PASS$'
	assert_line --regexp '^    task map: binary maps at 0\.5 agree on 1\.0000 of 256 pixels'
	assert_line --regexp '^    task seg: argmax maps agree on 1\.0000 of 64 pixels'
	# a feature map has no task: cosine only
	assert_line --regexp '^feat .* PASS$'
	refute_line --partial 'task none'
	run npz-compare "$T/a.npz" "$T/bad.npz" --task auto --tolerance 0.5,-10
	assert_failure 1
	assert_line --regexp '^cls .* FAIL  class: top-1 [0-9]+ != 3, top-5 4/5$'
	assert_line --regexp '^p .* FAIL  score: \|a-b\| 0\.21 .*opposite sides of 0\.5$'
	assert_line --regexp '^ctc .* FAIL  ctc: CTC text differs: 3 vs 3 labels, first at label 1$'
	assert_line --regexp '^m .* FAIL  map: binary maps at 0\.5 agree on 0\.7500 of 256 pixels'
	assert_line --regexp '^seg .* FAIL  seg: argmax maps agree on 0\.0000 of 64 pixels'
	# a probability near 0 rounded to 0: cosine 0, but the score passes
	run npz-compare "$T/p.npz" "$T/z.npz"
	assert_failure 1
	run npz-compare "$T/p.npz" "$T/z.npz" --task auto
	assert_success
	# a task forced on a shape it does not fit; without --task, cosine only
	run npz-compare "$T/a.npz" "$T/a.npz" --task ctc
	assert_failure 1
	assert_line --regexp '^cls .* FAIL  ctc: shape does not fit a ctc check$'
	run npz-compare "$T/a.npz" "$T/bad.npz" --tolerance 0.5,-10
	refute_output --partial 'task'
	run npz-compare "$T/a.npz" "$T/a.npz" --task words
	assert_failure 2
	assert_output --partial "unknown --task 'words'"
}
