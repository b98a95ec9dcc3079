#!/usr/bin/env python3
"""The fixed held-out set of issue 25 part 1: six public model architectures,
exported with torch.export (training graph made by `placer graph import`).

    heldout_models.py OUTDIR        writes OUTDIR/NAME.pt2 for every model

Random weights, fixed seeds (torch.manual_seed(25) before each model), the
sizes below. This set was chosen before any learned-placer or search run on it
and is used to tune nothing: keep it fixed (see bench/results/learned_heldout.md).
Run it with the project environment's python (.venv/bin/python3).
"""
import math
import os
import sys
import warnings

import torch
import torch.nn as nn

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from make_export_fixtures import Gpt, SquareLoss  # noqa: E402  (the project's GPT-2-style stack)


class UnrolledLstmLm(nn.Module):
    """A word-level LSTM language model (Zaremba et al. style), LSTMCells unrolled over time."""

    def __init__(self, vocab, dim, hidden, layers, steps):
        super().__init__()
        self.steps = steps
        self.embed = nn.Embedding(vocab, dim)
        self.cells = nn.ModuleList([nn.LSTMCell(dim if i == 0 else hidden, hidden) for i in range(layers)])
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens):  # tokens: batch x steps
        x = self.embed(tokens)
        b = tokens.shape[0]
        state = [(x.new_zeros(b, c.hidden_size), x.new_zeros(b, c.hidden_size)) for c in self.cells]
        outs = []
        for t in range(self.steps):
            h = x[:, t]
            for i, cell in enumerate(self.cells):
                state[i] = cell(h, state[i])
                h = state[i][0]
            outs.append(self.out(h))
        return torch.stack(outs, 1)


class Dlrm(nn.Module):
    """DLRM-style recommender (Naumov et al. 2019): dense features through a bottom MLP,
    sparse features through embedding tables, pairwise dot interactions, top MLP."""

    def __init__(self, dense=13, tables=8, rows=200000, dim=64, bottom=(512, 256, 64), top=(512, 256, 1)):
        super().__init__()
        self.tables = nn.ModuleList([nn.Embedding(rows, dim) for _ in range(tables)])
        layers, width = [], dense
        for w in bottom:
            layers += [nn.Linear(width, w), nn.ReLU()]
            width = w
        self.bottom = nn.Sequential(*layers)
        n = tables + 1
        width = dim + n * (n - 1) // 2
        layers = []
        for i, w in enumerate(top):
            layers += [nn.Linear(width, w)] + ([nn.ReLU()] if i + 1 < len(top) else [])
            width = w
        self.top = nn.Sequential(*layers)
        self.n = n

    def forward(self, dense, sparse):  # sparse: batch x tables
        x = self.bottom(dense)
        feats = [x] + [t(sparse[:, i]) for i, t in enumerate(self.tables)]
        z = torch.stack(feats, 1)
        inter = z @ z.transpose(1, 2)
        iu = torch.triu_indices(self.n, self.n, offset=1)
        # index_select, not inter[:, i, j]: the importer cannot yet read back a graph with
        # aten.index over a tensor list holding None (found making this set; not fixed here).
        flat = torch.index_select(inter.flatten(1), 1, iu[0] * self.n + iu[1])
        return torch.sigmoid(self.top(torch.cat([x, flat], 1)))


class Seq2SeqTransformer(nn.Module):
    def __init__(self, vocab, dim, heads, layers, ff):
        super().__init__()
        self.src = nn.Embedding(vocab, dim)
        self.tgt = nn.Embedding(vocab, dim)
        self.transformer = nn.Transformer(dim, heads, layers, layers, ff, dropout=0.0, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, src, tgt):
        return self.out(self.transformer(self.src(src), self.tgt(tgt)))


def models():
    import torchvision.models as tv

    def tokens(*shape, high):
        return torch.randint(0, high, shape)

    return {
        # vision: batch 32 of 3x112x112
        "resnet18": lambda: (SquareLoss(tv.resnet18(weights=None)), (torch.randn(32, 3, 112, 112),), False),
        "mobilenet_v2": lambda: (SquareLoss(tv.mobilenet_v2(weights=None)), (torch.randn(32, 3, 112, 112),), False),
        # sequence: 2-layer LSTM LM, 1024 hidden, 10 steps, batch 64, vocab 10000
        "lstm_lm": lambda: (SquareLoss(UnrolledLstmLm(10000, 512, 1024, 2, 10)), (tokens(64, 10, high=10000),), True),
        # transformer: GPT-2-style decoder, 6 blocks, d=512, 8 heads, 16x128 tokens of 16384
        "gpt2": lambda: (SquareLoss(Gpt(vocab=16384, dim=512, heads=8, layers=6, context=128)),
                         (tokens(16, 128, high=16384),), True),
        # transformer: nn.Transformer encoder-decoder, 3+3 layers, d=512, src 32x48, tgt 32x40, vocab 8000
        "transformer_mt": lambda: (SquareLoss(Seq2SeqTransformer(8000, 512, 8, 3, 2048)),
                                   (tokens(32, 48, high=8000), tokens(32, 40, high=8000)), True),
        # recommender: DLRM-style, 8 tables of 200,000 x 64, batch 2048
        "dlrm": lambda: (SquareLoss(Dlrm()), (torch.randn(2048, 13), tokens(2048, 8, high=200000)), True),
    }


def export_models(made, out, seed):
    """Exports every (module, inputs, train) maker of `made` to OUT/NAME.pt2, torch.manual_seed(seed) before each."""
    os.makedirs(out, exist_ok=True)
    for name, make in made.items():
        torch.manual_seed(seed)
        module, inputs, train = make()
        module.train(train)  # vision in eval mode (batch norm with running statistics), as bench/import_coverage.sh
        program = torch.export.export(module, inputs)
        torch.export.save(program, os.path.join(out, name + ".pt2"))
        print(f"{name}: {len(program.graph.nodes)} FX nodes", flush=True)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    export_models(models(), sys.argv[1], 25)


if __name__ == "__main__":
    main()
