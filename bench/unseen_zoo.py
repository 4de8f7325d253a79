#!/usr/bin/python3
"""unseen_zoo.py - networks the project does not test on, for
bench/chip-table.sh: torchvision constructors with random weights, batch
norm statistics re-estimated on random data (train mode, a few forward
passes) so that activations are realistic, exported to ONNX (opset 13).

    /usr/bin/python3 bench/unseen_zoo.py OUTDIR [NAME ...]
    bench/chip-table.sh -f bench/unseen-figures.txt OUTDIR/*.onnx

Writes OUTDIR/NAME.onnx, OUTDIR/NAME_calib.npz (8 samples, key "input", as
chip-table.sh reads them) and OUTDIR/NAME_input.npz (one sample) per
network; every network when no NAME is given.  Needs Debian's python3
with torch and torchvision (0.14); the weights are random with a fixed
seed, so each run writes the same models.  The cycles tpu-sim counts do
not depend on the weights' values, only on the shapes.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision.models as tvm


class SSDRaw(nn.Module):
    """SSDlite320 (MobileNetV3-Large backbone): the head's raw outputs,
    without the box decoding and NMS (data-dependent shapes)."""

    def __init__(self):
        super().__init__()
        m = tvm.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)
        self.backbone, self.head = m.backbone, m.head

    def forward(self, x):
        h = self.head(list(self.backbone(x).values()))
        return h["bbox_regression"], h["cls_logits"]


class OCRRec(nn.Module):
    """A text recogniser: MobileNetV3-Small features on a 48x320 line, a
    1x1 projection, a 2-layer transformer encoder over the columns and a
    per-column classifier (97 symbols)."""

    def __init__(self):
        super().__init__()
        self.f = tvm.mobilenet_v3_small().features
        self.proj = nn.Conv2d(576, 192, 1)
        layer = nn.TransformerEncoderLayer(192, 4, 384, batch_first=True, dropout=0.0)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.fc = nn.Linear(192, 97)

    def forward(self, x):
        y = self.proj(self.f(x)).mean(2).permute(0, 2, 1)
        return self.fc(self.enc(y))


def vit_tiny():
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=3,
                             hidden_dim=192, mlp_dim=768)


MODELS = {
    "resnet50": (lambda: tvm.resnet50(), (1, 3, 224, 224)),
    "googlenet": (lambda: tvm.googlenet(aux_logits=False, init_weights=True), (1, 3, 224, 224)),
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(), (1, 3, 224, 224)),
    "shufflenet_v2": (lambda: tvm.shufflenet_v2_x1_0(), (1, 3, 224, 224)),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(), (1, 3, 224, 224)),
    "regnet_y_400mf": (lambda: tvm.regnet_y_400mf(), (1, 3, 224, 224)),
    "densenet121": (lambda: tvm.densenet121(), (1, 3, 224, 224)),
    "squeezenet1_0": (lambda: tvm.squeezenet1_0(), (1, 3, 224, 224)),
    "ssdlite_raw": (SSDRaw, (1, 3, 320, 320)),
    "vit_tiny": (vit_tiny, (1, 3, 224, 224)),
    "ocr_rec": (OCRRec, (1, 3, 48, 320)),
}


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: unseen_zoo.py OUTDIR [NAME ...]")
    out = sys.argv[1]
    names = sys.argv[2:] or list(MODELS)
    for name in names:
        if name not in MODELS:
            sys.exit("unseen_zoo.py: no network '%s' (%s)" % (name, " ".join(MODELS)))
    os.makedirs(out, exist_ok=True)
    for name in names:
        torch.manual_seed(0)
        ctor, shape = MODELS[name]
        m = ctor()
        m.train()
        with torch.no_grad():
            for _ in range(4):
                m(torch.randn(8, *shape[1:]))
        m.eval()
        x = torch.randn(*shape)
        path = os.path.join(out, name)
        torch.onnx.export(m, x, path + ".onnx", opset_version=13, input_names=["input"],
                          do_constant_folding=True)
        cal = np.random.RandomState(1).randn(8, *shape[1:]).astype(np.float32)
        np.savez(path + "_calib.npz", input=cal)
        np.savez(path + "_input.npz", input=x.numpy())
        print(name, flush=True)


if __name__ == "__main__":
    main()
