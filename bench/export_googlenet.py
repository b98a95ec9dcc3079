"""An imported model with parallel branches for the benchmarks: torchvision's GoogLeNet (Szegedy et al. 2015;
inception modules of four branches each, no auxiliary heads, 100 classes, random weights, seed 0) exported with
torch.export in eval mode (batch norm with running statistics), as bench/heldout_models.py exports its vision
models.  Usage: export_googlenet.py OUT.pt2 BATCH IMAGE"""
import os
import sys
import warnings

import torch
import torchvision.models as tv

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from make_export_fixtures import SquareLoss  # noqa: E402

out, batch, image = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
model = SquareLoss(tv.googlenet(weights=None, aux_logits=False, init_weights=False, num_classes=100)).eval()
torch.export.save(torch.export.export(model, (torch.randn(batch, 3, image, image),)), out)
