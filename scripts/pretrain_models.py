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


class Captioner(nn.Module):
    """An image captioner: a strided conv encoder whose feature map is the memory of an
    nn.TransformerDecoder (cross-attention with a packed key/value projection of that memory),
    teacher-forced without a causal mask (a mask would add one op per attention, not change the shape)."""

    def __init__(self, vocab, dim, heads, layers, ff, context):
        super().__init__()
        chans = [3, dim // 4, dim // 2, dim]
        convs = []
        for i in range(3):
            convs += [nn.Conv2d(chans[i], chans[i + 1], 3, stride=2, padding=1), nn.BatchNorm2d(chans[i + 1]),
                      nn.ReLU()]
        self.encoder = nn.Sequential(*convs)
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        layer = nn.TransformerDecoderLayer(dim, heads, ff, dropout=0.0, batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, layers)
        self.head = nn.Linear(dim, vocab)

    def forward(self, image, tokens):
        memory = self.encoder(image).flatten(2).transpose(1, 2)  # batch x (h * w) x dim
        pos = torch.arange(tokens.shape[1]).unsqueeze(0)
        return self.head(self.decoder(self.tok(tokens) + self.pos(pos), memory))


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
        # added in the twenty-seventh session (disclosed in learned_heldout.md): the family had no
        # nn.MultiheadAttention cross-attention, whose memory key/value projection is a side branch
        "captioner": lambda: (SquareLoss(Captioner(6000, 384, 6, 4, 1536, 32)),
                              (torch.randn(32, 3, 64, 64), tokens(32, 32, high=6000)), True),
        "wide_deep": lambda: (SquareLoss(WideDeep()), (torch.randn(1024, 16), tokens(1024, 6, high=50000)), True),
    }


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    export_models(models(), sys.argv[1], 7)


if __name__ == "__main__":
    main()
