#!/usr/bin/env python3
"""Writes the TorchScript files the importer is tested on.

    make_fixtures.py [OUT_DIR]            tiny fixtures (a few KB each), committed
                                          under tests/fixtures/
    make_fixtures.py --real OUT_DIR [NAME ...]
                                          traces real torchvision / sequence models
                                          with random weights into OUT_DIR and prints
                                          one JSON line per model: file, inputs,
                                          parameter count and output shape.

Needs PyTorch: run it with the project environment, .venv/bin/python3 (torch 2.11, torchvision 0.26).
Every model is traced in eval mode with a fixed seed, so reruns give the same graphs.
"""
import json
import os
import sys

import torch
import torch.nn as nn


class TinyCNN(nn.Module):
    """conv -> batchnorm -> relu -> maxpool -> linear, on 8x8 images."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 5)

    def forward(self, x):
        x = self.pool(self.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(x, 1))


class TinyLSTMLM(nn.Module):
    """Embedding -> 2-layer nn.LSTM (one aten::lstm) -> linear over the vocabulary."""

    def __init__(self, vocab=20, hidden=8):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, num_layers=2)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        output, _ = self.lstm(self.embedding(tokens))
        return self.decoder(output)


class UnrolledLSTMLM(nn.Module):
    """The same LM with a hand-written LSTM cell unrolled over the steps (tracing unrolls the loop)."""

    def __init__(self, vocab=20, hidden=8):
        super().__init__()
        self.hidden = hidden
        self.embedding = nn.Embedding(vocab, hidden)
        self.gates = nn.Linear(2 * hidden, 4 * hidden)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        steps, batch = tokens.shape
        h = torch.zeros(batch, self.hidden)
        c = torch.zeros(batch, self.hidden)
        embedded = self.embedding(tokens)
        outputs = []
        for t in range(steps):
            i, f, g, o = self.gates(torch.cat([embedded[t], h], dim=1)).chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        return self.decoder(torch.stack(outputs))


class Regression(nn.Module):
    """Two inputs and a scalar loss output: the importer must not add another loss."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x, target):
        return nn.functional.mse_loss(self.fc(x), target)


class Branchy(nn.Module):
    """Data-dependent control flow: scripted, it keeps a prim::If."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if bool(y.sum() > 0):
            y = torch.relu(y)
        return y


class NoDerivative(nn.Module):
    """aten::nextafter has no derivative in ATen: a training graph must fail, an inference graph works."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.nextafter(self.fc(x), x).sum(1)


def save_traced(model, example, path):
    model.eval()
    with torch.no_grad():
        traced = torch.jit.trace(model, example, check_trace=False)
    traced.save(path)
    return traced


def make_tiny(out_dir):
    torch.manual_seed(0)
    os.makedirs(out_dir, exist_ok=True)
    cnn = save_traced(TinyCNN(), (torch.randn(2, 3, 8, 8),), os.path.join(out_dir, "tiny_cnn.pt"))
    # Frozen before saving: weights are constants, batchnorm folded into the conv.
    torch.jit.freeze(cnn).save(os.path.join(out_dir, "tiny_cnn_frozen.pt"))
    save_traced(TinyLSTMLM(), (torch.randint(0, 20, (5, 2)),), os.path.join(out_dir, "tiny_lstm_lm.pt"))
    save_traced(UnrolledLSTMLM(), (torch.randint(0, 20, (3, 2)),), os.path.join(out_dir, "tiny_lstm_unrolled.pt"))
    save_traced(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16), (torch.randn(4, 2, 8),),
                os.path.join(out_dir, "tiny_transformer.pt"))
    save_traced(Regression(), (torch.randn(4, 3), torch.randn(4, 2)), os.path.join(out_dir, "tiny_regression.pt"))
    save_traced(NoDerivative(), (torch.randn(2, 4),), os.path.join(out_dir, "no_derivative.pt"))
    torch.jit.script(Branchy().eval()).save(os.path.join(out_dir, "control_flow.pt"))
    with open(os.path.join(out_dir, "not_a_model.pt"), "wb") as f:
        f.write(b"this is not a TorchScript archive\n" * 4)
    for name in sorted(os.listdir(out_dir)):
        if name.endswith(".pt"):
            print(f"{name}: {os.path.getsize(os.path.join(out_dir, name))} bytes")


# ---------------------------------------------------------------- real models

def real_models():
    import torchvision.models as tv

    class LSTMLM(nn.Module):
        def __init__(self, vocab=1000, hidden=256, layers=2):
            super().__init__()
            self.embedding = nn.Embedding(vocab, hidden)
            self.lstm = nn.LSTM(hidden, hidden, num_layers=layers)
            self.decoder = nn.Linear(hidden, vocab)

        def forward(self, tokens):
            output, _ = self.lstm(self.embedding(tokens))
            return self.decoder(output)

    def encoder():
        layer = nn.TransformerEncoderLayer(128, 4, dim_feedforward=256)
        return nn.TransformerEncoder(layer, 2)

    # name -> (constructor, [(input name, shape, dtype)])
    return {
        "resnet18": (lambda: tv.resnet18(), [("x", [2, 3, 64, 64], "float")]),
        "resnet50": (lambda: tv.resnet50(), [("x", [1, 3, 64, 64], "float")]),
        "resnet101": (lambda: tv.resnet101(), [("x", [1, 3, 64, 64], "float")]),
        "resnet152": (lambda: tv.resnet152(), [("x", [1, 3, 64, 64], "float")]),
        "mobilenet_v2": (lambda: tv.mobilenet_v2(), [("x", [2, 3, 64, 64], "float")]),
        "googlenet": (lambda: tv.googlenet(aux_logits=False, init_weights=True), [("x", [1, 3, 64, 64], "float")]),
        "inception_v3": (lambda: tv.inception_v3(aux_logits=False, init_weights=True), [("x", [1, 3, 299, 299], "float")]),
        "lstm_lm": (lambda: LSTMLM(), [("tokens", [10, 4], "long")]),
        "transformer_encoder": (encoder, [("src", [10, 4, 128], "float")]),
    }


def make_real(out_dir, names):
    os.makedirs(out_dir, exist_ok=True)
    models = real_models()
    for name in names or list(models):
        if name not in models:
            sys.exit(f"unknown model '{name}' (known: {', '.join(models)})")
        torch.manual_seed(0)
        build, inputs = models[name]
        model = build().eval()
        example = tuple(
            torch.randint(0, 2, shape) if dtype == "long" else torch.randn(*shape) for _, shape, dtype in inputs)
        path = os.path.join(out_dir, name + ".pt")
        traced = save_traced(model, example, path)
        with torch.no_grad():
            out = traced(*example)
        if isinstance(out, (tuple, list)):
            out = out[0]
        print(json.dumps({
            "name": name,
            "file": path,
            "inputs": ["%s:%s:%s" % (n, "x".join(map(str, s)), d) for n, s, d in inputs],
            "parameters": sum(p.numel() for p in model.parameters()),
            "output_shape": list(out.shape),
        }), flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--real":
        if len(args) < 2:
            sys.exit(__doc__)
        make_real(args[1], args[2:])
    else:
        default = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
        make_tiny(args[0] if args else default)
