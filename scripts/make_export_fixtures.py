#!/usr/bin/env python3
"""Export models with torch.export and record what eager PyTorch computes.

    make_export_fixtures.py OUTDIR [--real] [--lr 0.01] [NAME...]

For each model it writes:
  OUTDIR/NAME.pt2       torch.export.save of the exported program
  OUTDIR/NAME.eager.pt  torch.save of a dict of tensors:
                          feed/<op name>   the inputs, parameters, buffers and
                                           constants the program was run with
                          expect/loss      the loss eager PyTorch computes
                          expect/<param>   each parameter after one SGD step

The loss is what placer's importer trains on: the program's output when it is
one scalar, else the mean of its first floating-point output. The update is
plain SGD (p - lr * grad), as placer::sgd does. Without --real it makes the
small fixtures of the tests; with --real the models of bench/results/import.md.
Run it with the project environment's python (.venv/bin/python3).
"""
import argparse
import math
import os
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore")


# ---------------------------------------------------------------- models

class TinyCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        y = self.relu(self.bn(self.conv(x)))
        y = F.max_pool2d(y, 2)
        return self.fc(y.flatten(1))


class LstmLm(nn.Module):
    def __init__(self, vocab=50, dim=16, hidden=32, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, layers)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        y, _ = self.lstm(self.embed(tokens))
        return self.out(y)


class GptBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.fc_out = nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    """A GPT-2-style decoder: token and position embeddings, pre-norm blocks, tied head."""

    def __init__(self, vocab=64, dim=32, heads=4, layers=2, context=16):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList([GptBlock(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)

    def forward(self, tokens):
        t = tokens.shape[1]
        pos = torch.arange(t, device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


class Seq2Seq(nn.Module):
    def __init__(self, dim=16, heads=2, layers=1, ff=32):
        super().__init__()
        self.transformer = nn.Transformer(dim, heads, layers, layers, ff, dropout=0.0, batch_first=True)

    def forward(self, src, tgt):
        return self.transformer(src, tgt)


class Encoder(nn.Module):
    def __init__(self, dim=16, heads=2, layers=2):
        super().__init__()
        layer = nn.TransformerEncoderLayer(dim, heads, 32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, src):
        return self.encoder(src)


class Regression(nn.Module):
    """Returns its own scalar loss: the importer trains on it as it is."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x, target):
        return F.mse_loss(self.fc(x), target)


class Gather(nn.Module):
    """x[:, idx]: aten.index with None (the untouched dim 0) in its index list."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.register_buffer("idx", torch.tensor([3, 0, 2, 1]))

    def forward(self, x):
        return self.fc(x[:, self.idx])


def tokens(*shape, high):
    return torch.randint(0, high, shape)


def small_models():
    """name -> (module, example inputs, train mode, decompose, dynamic_shapes)."""
    return {
        # Training-IR form in train mode: batch norm's counter (add_) and relu_ are in place.
        "tiny_cnn": (TinyCnn(), (torch.randn(2, 3, 8, 8),), True, False, None),
        # The decomposed core-ATen form, eval mode.
        "tiny_cnn_core": (TinyCnn(), (torch.randn(2, 3, 8, 8),), False, True, None),
        "tiny_lstm_lm": (LstmLm(), (tokens(6, 2, high=50),), True, False, None),
        "tiny_gpt": (Gpt(), (tokens(2, 8, high=64),), True, False, None),
        "tiny_transformer": (Seq2Seq(), (torch.randn(2, 5, 16), torch.randn(2, 4, 16)), True, False, None),
        "tiny_regression": (Regression(), (torch.randn(4, 3), torch.randn(4, 2)), True, False, None),
        "tiny_gather": (Gather(), (torch.randn(2, 5, 4),), True, False, None),
        # The batch size is symbolic (2..64), recorded example 4.
        "tiny_dynamic": (TinyCnn(), (torch.randn(4, 3, 8, 8),), False, False,
                         ({0: torch.export.Dim("batch", min=2, max=64)},)),
    }


def other_fixtures(outdir):
    """Archives the importer must refuse, or that show a fused fast path."""
    @torch.library.custom_op("placer_test::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @twice.register_fake
    def _(x):
        return torch.empty_like(x)

    class CustomOp(nn.Module):
        def forward(self, x):
            return twice(x).sum()

    class Cond(nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda x: x + 1, lambda x: x - 1, (x,))

    torch.export.save(torch.export.export(CustomOp(), (torch.randn(3),)), os.path.join(outdir, "custom_op.pt2"))
    torch.export.save(torch.export.export(Cond(), (torch.randn(3),)), os.path.join(outdir, "cond.pt2"))
    # nn.TransformerEncoder in eval mode: torch.jit.trace records the fused
    # inference op (no derivative); torch.export records the reference ops.
    encoder = Encoder().eval()
    src = torch.randn(2, 5, 16)
    with torch.no_grad():
        torch.jit.trace(encoder, (src,)).save(os.path.join(outdir, "encoder_fastpath.pt"))
        torch.export.save(torch.export.export(encoder, (src,)), os.path.join(outdir, "encoder_eval.pt2"))
    print(f"custom_op, cond, encoder_fastpath (.pt), encoder_eval -> {outdir}", flush=True)
    misread_fixtures(outdir)
    review_fixtures(outdir)


def misread_fixtures(outdir):
    """Models the importers once read wrong without a word (a code review, 2026-12-02)."""
    class ViewWrite(nn.Module):  # z[:, :2] = g(x): an in-place copy_ into a slice of z, then z is read
        def __init__(self):
            super().__init__()
            self.g, self.fc = nn.Linear(4, 2), nn.Linear(4, 3)

        def forward(self, x):
            z = torch.zeros(x.shape[0], 4)
            z[:, :2] = self.g(x)
            return self.fc(z).sum()

    class Numbers(nn.Module):  # two Python numbers made tensors, a double then a long
        def __init__(self):
            super().__init__()
            self.emb, self.fc = nn.Embedding(10, 4), nn.Linear(4, 4)

        def forward(self, x, idx):
            h = torch.div(self.fc(x), 0.5, rounding_mode="floor")
            return (h + self.emb(torch.div(idx, 2, rounding_mode="floor"))).sum()

    class Frozen(nn.Module):  # a frozen backbone, a trainable head
        def __init__(self):
            super().__init__()
            self.backbone, self.head = nn.Linear(8, 8), nn.Linear(8, 2)
            for p in self.backbone.parameters():
                p.requires_grad_(False)

        def forward(self, x):
            return self.head(torch.relu(self.backbone(x))).sum()

    class LogitsAndLoss(nn.Module):  # returns (logits, loss): trains on its loss
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 5)

        def forward(self, x, y):
            logits = self.fc(x)
            return logits, F.cross_entropy(logits, y)

    x = torch.randn(3, 4)
    torch.export.save(torch.export.export(ViewWrite(), (x,)), os.path.join(outdir, "view_write.pt2"))
    torch.export.save(torch.export.export(Numbers(), (x, tokens(3, high=10))), os.path.join(outdir, "numbers.pt2"))
    frozen, x8 = Frozen(), torch.randn(3, 8)
    torch.export.save(torch.export.export(frozen, (x8,)), os.path.join(outdir, "frozen.pt2"))
    torch.jit.trace(frozen, (x8,)).save(os.path.join(outdir, "frozen.pt"))
    torch.export.save(torch.export.export(LogitsAndLoss(), (x8, tokens(3, high=5))),
                      os.path.join(outdir, "logits_and_loss.pt2"))
    # frozen.pt2 with a tensor whose metadata claims 2^43 elements (its stride arithmetic overflowed int64).
    import json
    import zipfile
    with zipfile.ZipFile(os.path.join(outdir, "frozen.pt2")) as zin, \
            zipfile.ZipFile(os.path.join(outdir, "huge_meta.pt2"), "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("models/model.json"):
                program = json.loads(data)
                values = program["graph_module"]["graph"]["tensor_values"]
                values[next(k for k in values if "head_weight" in k)]["sizes"] = [{"as_int": 1 << 40}, {"as_int": 8}]
                data = json.dumps(program).encode()
            zout.writestr(info, data)
    print(f"view_write, numbers, frozen (.pt2, .pt), logits_and_loss, huge_meta -> {outdir}", flush=True)


def review_fixtures(outdir):
    """In-place writes the importer made functional wrong (a code review of frontends/, 2026-12)."""
    class ChunkWrite(nn.Module):  # an in-place write into one of chunk's views (a Tensor(a)[]), then its base read
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            y = x * 2
            a, _ = y.chunk(2, 1)
            a.relu_()
            return self.fc(y).sum()

    class InPlaceDtype(nn.Module):  # half.add_(float) stays Half; half.add(float) is Float
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            h = self.fc(x).half()
            h.add_(x)
            return h.float().sum()

    x = torch.randn(3, 4)
    torch.export.save(torch.export.export(ChunkWrite(), (x,)), os.path.join(outdir, "chunk_write.pt2"))
    torch.export.save(torch.export.export(InPlaceDtype(), (x,)), os.path.join(outdir, "inplace_dtype.pt2"))
    print(f"chunk_write, inplace_dtype -> {outdir}", flush=True)


class SquareLoss(nn.Module):
    """model(*x).pow(2).mean(): a scalar loss with gradients everywhere (the mean
    of a LayerNorm-ed output is 0, and so is its gradient)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *inputs):
        return self.model(*inputs).pow(2).mean()


def real_models():
    import torchvision.models as tv

    def vision(ctor, size, batch=2, **kw):
        model = ctor(weights=None, **kw)
        for p in model.parameters():  # vit_b_16 starts its head at zero: no gradient would flow
            if p.dim() > 1 and not p.abs().sum():
                nn.init.normal_(p, std=0.02)
        return (SquareLoss(model), (torch.randn(batch, 3, size, size),), False, False, None)

    return {
        "resnet50": vision(tv.resnet50, 224),
        "inception_v3": vision(tv.inception_v3, 299, aux_logits=False, init_weights=False),
        "mobilenet_v2": vision(tv.mobilenet_v2, 224),
        "googlenet": vision(tv.googlenet, 224, aux_logits=False, init_weights=False),
        "vit_b_16": vision(tv.vit_b_16, 224, batch=1),
        "transformer": (SquareLoss(Seq2Seq(dim=256, heads=8, layers=3, ff=1024)),
                        (torch.randn(4, 32, 256), torch.randn(4, 24, 256)), True, False, None),
        "gpt2_blocks": (SquareLoss(Gpt(vocab=8192, dim=384, heads=6, layers=6, context=128)),
                        (tokens(4, 128, high=8192),), True, False, None),
        "lstm_lm": (SquareLoss(LstmLm(vocab=10000, dim=256, hidden=512, layers=2)), (tokens(32, 16, high=10000),), True, False, None),
    }


# ---------------------------------------------------------------- eager reference

def first_float(out):
    flat = list(out) if isinstance(out, (tuple, list)) else [out]
    floats = [t for t in flat if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if len(flat) == 1 and floats and floats[0].dim() == 0:
        return floats[0]
    return floats[0].mean()


def write(outdir, name, module, inputs, train, decompose, dynamic, lr):
    torch.manual_seed(abs(hash(name)) % 1000)
    module.train(train)
    program = torch.export.export(module, inputs, dynamic_shapes=dynamic)
    if decompose:
        program = program.run_decompositions()
    torch.export.save(program, os.path.join(outdir, name + ".pt2"))

    names = [s.arg.name for s in program.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    feed = {}
    for n, t in zip(names, inputs):
        feed["feed/" + n] = t.detach().clone()
    for n, p in module.named_parameters():
        feed["feed/" + n] = p.detach().clone()
    for n, b in module.named_buffers():
        feed["feed/" + n] = b.detach().clone()
    for n, c in program.constants.items():
        if isinstance(c, torch.Tensor):
            feed["feed/" + n] = c.detach().clone()

    # Eager: the same mode, the same inputs; one SGD step.
    module.zero_grad()
    loss = first_float(module(*inputs))
    loss.backward()
    expect = {"expect/loss": loss.detach().reshape(())}
    with torch.no_grad():
        for n, p in module.named_parameters():
            expect["expect/" + n] = p - lr * p.grad if p.grad is not None else p.detach().clone()
    torch.save({**feed, **expect}, os.path.join(outdir, name + ".eager.pt"))
    return len(program.graph.nodes)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("names", nargs="*", help="models to write (default: all of the set)")
    ap.add_argument("--real", action="store_true", help="the full-size models of bench/results/import.md")
    ap.add_argument("--lr", type=float, default=0.01, help="SGD learning rate of the expected update")
    args = ap.parse_intermixed_args()  # names may follow --real
    torch.manual_seed(0)
    models = real_models() if args.real else small_models()
    unknown = [n for n in args.names if n not in models]
    if unknown:
        sys.exit(f"unknown model(s) {unknown}; known: {sorted(models)}")
    os.makedirs(args.outdir, exist_ok=True)
    for name in args.names or models:
        module, inputs, train, decompose, dynamic = models[name]
        nodes = write(args.outdir, name, module, inputs, train, decompose, dynamic, args.lr)
        print(f"{name}: {nodes} FX nodes -> {os.path.join(args.outdir, name)}.pt2", flush=True)
    if not args.real and not args.names:
        other_fixtures(args.outdir)


if __name__ == "__main__":
    main()
