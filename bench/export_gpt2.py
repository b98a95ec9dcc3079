"""The benchmarks' imported model: a GPT-2-style stack (4 blocks, d=192, 64-token context, vocabulary 2000)
exported with torch.export, seed 0.  Usage: export_gpt2.py OUT.pt2 BATCH"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from make_export_fixtures import Gpt, SquareLoss  # noqa: E402

out, batch = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
model = SquareLoss(Gpt(vocab=2000, dim=192, heads=4, layers=4, context=64)).train()
tokens = torch.randint(0, 2000, (batch, 64))
torch.export.save(torch.export.export(model, (tokens,)), out)
