#!/usr/bin/env python3
"""The imported models of the pretrained gnn's family (configs/pretrain_gnn.yaml):
public architectures exported with torch.export, none of them in the held-out set
of issue 25 (bench/heldout_models.py: resnet18, mobilenet_v2, an LSTM LM, a GPT-2
stack, nn.Transformer, DLRM) and none of those at other sizes.

    pretrain_models.py OUTDIR        writes OUTDIR/NAME.pt2 for every model

Random weights, torch.manual_seed(7) before each model. Run it with the project
environment's python (.venv/bin/python3); scripts/pretrain.sh imports the files.
"""
import os
import sys
import warnings

import torch
import torch.nn as nn

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from make_export_fixtures import SquareLoss  # noqa: E402
from heldout_models import export_models  # noqa: E402  (the held-out set's export, another seed)


class UnrolledGruLm(nn.Module):
    """A GRU language model, GRUCells unrolled over time (not the held-out LSTM)."""

    def __init__(self, vocab, dim, hidden, layers, steps):
        super().__init__()
        self.steps = steps
        self.embed = nn.Embedding(vocab, dim)
        self.cells = nn.ModuleList([nn.GRUCell(dim if i == 0 else hidden, hidden) for i in range(layers)])
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        b = tokens.shape[0]
        state = [x.new_zeros(b, c.hidden_size) for c in self.cells]
        outs = []
        for t in range(self.steps):
            h = x[:, t]
            for i, cell in enumerate(self.cells):
                state[i] = cell(h, state[i])
                h = state[i]
            outs.append(self.out(h))
        return torch.stack(outs, 1)


class BertEncoder(nn.Module):
    """An encoder-only (BERT-style) stack: nn.TransformerEncoder, token + position embeddings."""

    def __init__(self, vocab, dim, heads, layers, ff, context):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1]).unsqueeze(0)
        return self.head(self.encoder(self.tok(tokens) + self.pos(pos)))


class PreNormSeq2Seq(nn.Module):
    """An encoder-decoder written out by hand (Marian / T5-style, not nn.Transformer): pre-norm blocks,
    separate query, key and value projections, GELU feed-forward, one embedding shared by source,
    target and output."""

    class Attention(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))

        def forward(self, x, mem, causal):
            b, t, d = x.shape

            def split(y):
                return y.view(b, y.shape[1], self.heads, d // self.heads).transpose(1, 2)

            a = nn.functional.scaled_dot_product_attention(split(self.q(x)), split(self.k(mem)),
                                                           split(self.v(mem)), is_causal=causal)
            return self.o(a.transpose(1, 2).reshape(b, t, d))

    class Block(nn.Module):
        def __init__(self, dim, heads, ff, cross):
            super().__init__()
            self.n1, self.self_att = nn.LayerNorm(dim), PreNormSeq2Seq.Attention(dim, heads)
            self.n2 = nn.LayerNorm(dim) if cross else None
            self.cross_att = PreNormSeq2Seq.Attention(dim, heads) if cross else None
            self.n3, self.ff1, self.ff2 = nn.LayerNorm(dim), nn.Linear(dim, ff), nn.Linear(ff, dim)

        def forward(self, x, mem=None):
            h = self.n1(x)
            x = x + self.self_att(h, h, mem is not None)
            if self.cross_att is not None:
                x = x + self.cross_att(self.n2(x), mem, False)
            return x + self.ff2(nn.functional.gelu(self.ff1(self.n3(x))))

    def __init__(self, vocab, dim, heads, enc_layers, dec_layers, ff):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.enc = nn.ModuleList([PreNormSeq2Seq.Block(dim, heads, ff, False) for _ in range(enc_layers)])
        self.dec = nn.ModuleList([PreNormSeq2Seq.Block(dim, heads, ff, True) for _ in range(dec_layers)])
        self.norm = nn.LayerNorm(dim)

    def forward(self, src, tgt):
        mem = self.embed(src)
        for block in self.enc:
            mem = block(mem)
        x = self.embed(tgt)
        for block in self.dec:
            x = block(x, mem)
        return self.norm(x) @ self.embed.weight.t()


class WideDeep(nn.Module):
    """A wide & deep recommender (Cheng et al. 2016): embeddings concatenated, deep MLP, wide linear part."""

    def __init__(self, dense=16, tables=6, rows=50000, dim=32, deep=(1024, 512, 256)):
        super().__init__()
        self.tables = nn.ModuleList([nn.Embedding(rows, dim) for _ in range(tables)])
        layers, width = [], dense + tables * dim
        for w in deep:
            layers += [nn.Linear(width, w), nn.ReLU()]
            width = w
        self.deep = nn.Sequential(*layers, nn.Linear(width, 1))
        self.wide = nn.Linear(dense, 1)

    def forward(self, dense, sparse):
        emb = [t(sparse[:, i]) for i, t in enumerate(self.tables)]
        return torch.sigmoid(self.deep(torch.cat([dense] + emb, 1)) + self.wide(dense))


def models():
    import torchvision.models as tv

    def tokens(*shape, high):
        return torch.randint(0, high, shape)

    def vision(ctor, batch, size):
        return lambda: (SquareLoss(ctor(weights=None)), (torch.randn(batch, 3, size, size),), False)

    return {
        "squeezenet1_1": vision(tv.squeezenet1_1, 32, 128),
        "shufflenet_v2": vision(tv.shufflenet_v2_x1_0, 32, 112),
        "regnet_x_400mf": vision(tv.regnet_x_400mf, 16, 112),  # efficientnet_b0: its in-place dropout does not import
        "googlenet": lambda: (SquareLoss(tv.googlenet(weights=None, aux_logits=False, init_weights=False)),
                              (torch.randn(16, 3, 112, 112),), False),
        "vgg11": vision(tv.vgg11, 16, 64),
        "gru_lm": lambda: (SquareLoss(UnrolledGruLm(8000, 256, 768, 2, 8)), (tokens(32, 8, high=8000),), True),
        "bert_encoder": lambda: (SquareLoss(BertEncoder(8000, 256, 4, 4, 1024, 64)), (tokens(16, 64, high=8000),),
                                 True),
        "seq2seq_prenorm": lambda: (SquareLoss(PreNormSeq2Seq(6000, 384, 6, 4, 4, 1536)),
                                    (tokens(24, 56, high=6000), tokens(24, 36, high=6000)), True),
        "wide_deep": lambda: (SquareLoss(WideDeep()), (torch.randn(1024, 16), tokens(1024, 6, high=50000)), True),
    }


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    export_models(models(), sys.argv[1], 7)


if __name__ == "__main__":
    main()
