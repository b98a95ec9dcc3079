"""Helpers of tests/cli/pipeline_split.sh: the model it exports, places and
splits (an input layer, six LayerNorm + Linear + ReLU residual blocks in a
ModuleList, which is never called itself and so never a split point, and a
head), a placement written by hand, and the checks of the pipe that
placer_export.apply_split_spec builds from a split spec.

    pipeline_split.py export OUT.pt2 [twice]
    pipeline_split.py place GRAPH.json OUT.json STAGE_OF_BLOCK...   (e.g. 0 0 1 1 2 2: block i -> cpu:STAGE)
    pipeline_split.py check SPLIT.json [twice]

"twice" is a smaller model that calls one module twice in a row (b(fc(fc(a(x))))):
fc is never a split point, though its ops are contiguous.
"""
import json
import sys
import warnings

import torch
import torch.nn as nn

import placer_export


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)
        self.act = nn.ReLU()

    def forward(self, x):
        return x + self.act(self.fc(self.norm(x)))


class Net(nn.Module):
    def __init__(self, dim=16, layers=6):
        super().__init__()
        self.inp = nn.Linear(8, dim)
        self.layers = nn.ModuleList([Block(dim) for _ in range(layers)])
        self.head = nn.Linear(dim, 4)

    def forward(self, x):
        x = self.inp(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


class Twice(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.fc, self.b = nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x):
        return self.b(self.fc(self.fc(self.a(x))))


def make(name="net"):
    torch.manual_seed(0)
    return (Twice(), (torch.randn(4, 4),)) if name == "twice" else (Net(), (torch.randn(8, 8),))


def hand_placement(graph_path, out_path, block_stage):
    """Block i on cpu:block_stage[i]; inp with block 0, head and the loss with the last block; backward
    ops, parameters and updates with the module they belong to."""
    graph = json.load(open(graph_path))

    def stage(name):
        owner = name.split("/")[0]
        if owner.startswith("layers."):
            return block_stage[int(owner.split(".")[1])]
        if owner.startswith("head") or owner == "loss":
            return block_stage[-1]
        return block_stage[0]  # inp, the input x

    device = {op["name"]: f"cpu:{stage(op['name'])}" for op in graph["ops"]}
    json.dump({"format": "placer.placement", "version": 1, "graph": graph["name"], "placement": device},
              open(out_path, "w"))


def aten_calls(module):
    """The ATen calls a stage runs, through the submodules pipeline() outlined."""
    n = 0
    for node in module.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            n += 1
        elif node.op == "call_module":
            n += aten_calls(module.get_submodule(node.target))
    return n


def check(spec_path, name="net"):
    spec = json.load(open(spec_path))
    chosen = spec if spec["contiguous"] else spec["contiguous_alternative"]
    stages = chosen["stages"]
    model, args = make(name)
    names = [n for n, _ in model.named_parameters()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe = placer_export.apply_split_spec(model, args, spec_path, n_microbatches=2)
    said = any("contiguous_alternative" in str(w.message) for w in caught)
    assert said == (not spec["contiguous"]), [str(w.message) for w in caught]
    assert pipe.num_stages == len(stages), (pipe.num_stages, len(stages))
    seen = []
    for i, st in enumerate(stages):
        sub = pipe.get_stage_module(i)
        # pipeline() outlines each module call of the stage; a stage that begins inside a block
        # ("layers.2.fc") calls the block's remainder under the block's name ("layers.2").
        called = [n.target.split("@")[0] for n in sub.graph.nodes if n.op == "call_module"]  # fc@1: fc again
        assert len(called) == len(set(called)) or name == "twice", (i, called)
        assert all(any(m == c or m.startswith(c + ".") for c in called) for m in st["modules"]), (i, called, st)
        assert all(any(m == c or m.startswith(c + ".") for m in st["modules"]) for c in called), (i, called, st)
        params = sorted(n for n, _ in sub.named_parameters())
        expect = sorted(n for n in names if any(n.startswith(m + ".") for m in st["modules"]))
        assert params == expect, (i, params, expect)
        seen += params
        # placer's forward ops of the stage, less its loss (the mean placer trains on; not part of the model)
        ops = st["ops"] - (1 if i == len(stages) - 1 else 0)
        assert aten_calls(sub) == ops, (i, aten_calls(sub), ops)
    assert sorted(seen) == sorted(names), "every parameter in exactly one stage"
    print(f"pipe: {pipe.num_stages} stages, modules and parameters as placed")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "export":
        m, a = make(*sys.argv[3:])
        placer_export.export(m, a, sys.argv[2], train=True)
    elif cmd == "place":
        hand_placement(sys.argv[2], sys.argv[3], [int(s) for s in sys.argv[4:]])
    elif cmd == "check":
        check(*sys.argv[2:])
    else:
        sys.exit(f"unknown command {cmd}")
