"""Hand a PyTorch model to placer: export it with torch.export, and ask a
running placement service to place it.

    import torch, placer_export
    path = placer_export.export(model, (torch.randn(8, 3, 224, 224),), "model.pt2")
    reply = placer_export.place(path, "tcp://127.0.0.1:5555", cluster="k80x4")
    print(reply["method"], reply["step_s"], reply["placement"]["device"])

Or from a shell, for an archive saved before:

    python3 placer_export.py place model.pt2 --endpoint tcp://127.0.0.1:5555 --cluster k80x4

`placer graph import model.pt2 -o model.json` reads the same archive locally.

A pipeline split that `placer place ... --split-spec split.json` (or `placer
simulate ... --split-spec`) wrote runs with torch.distributed.pipelining:

    pipe = placer_export.apply_split_spec(model, (torch.randn(32, 3, 224, 224),), "split.json", n_microbatches=4)
    stage = pipe.get_stage_module(rank)   # then PipelineStage + ScheduleGPipe / Schedule1F1B as usual

Placement needs the program's structure and shapes, not its weights, so
`place` sends the archive without its large weight payloads (the importer
makes up values for tensors it does not find; integer buffers, which may be
indices, are kept) and without the example inputs (data/sample_inputs/: the
shapes are in the program). A request over the server's max_message_bytes
(default 16 MiB) is refused before it is sent. Needs torch (the project environment's, 2.6 or newer) to
export, and pyzmq to talk to the service.
"""

import argparse
import base64
import io
import json
import os
import sys
import warnings
import zipfile

DEFAULT_KEEP_BYTES = 64 * 1024


def export(model, example_inputs, path, dynamic_shapes=None, decompose=False, train=None):
    """torch.export the model on its example inputs and save it to PATH (.pt2).

    train: put the model in train (True) or eval (False) mode first; None leaves it.
    decompose: save the core-ATen form (ExportedProgram.run_decompositions()).
    """
    import torch

    if train is not None:
        model.train(train)
    program = torch.export.export(model, tuple(example_inputs), dynamic_shapes=dynamic_shapes)
    if decompose:
        program = program.run_decompositions()
    torch.export.save(program, path)
    return path


def structure_only(path, keep_bytes=DEFAULT_KEEP_BYTES):
    """The archive's bytes without weight payloads larger than keep_bytes, and without the example inputs.

    Integer tensors are always kept (they may be indices or position ids). data/sample_inputs/ (the
    pickled example inputs, as large as a batch of them) is left out: the importer takes input shapes
    from the program's metadata or --input, never from there."""
    with zipfile.ZipFile(path) as src:
        configs = {}
        for name in src.namelist():
            if name.endswith("model_weights_config.json") or name.endswith("model_constants_config.json"):
                folder = name.rsplit("/", 1)[0]
                for entry in json.loads(src.read(name)).get("config", {}).values():
                    dtype = (entry.get("tensor_meta") or {}).get("dtype", 7)
                    configs[folder + "/" + entry["path_name"]] = dtype
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for info in src.infolist():
                if "/data/sample_inputs/" in "/" + info.filename:
                    continue
                floating = configs.get(info.filename) in (6, 7, 8, 13)  # half, float, double, bfloat16
                if floating and info.file_size > keep_bytes:
                    continue
                dst.writestr(info, src.read(info.filename))
        return out.getvalue()


def place(path, endpoint="tcp://127.0.0.1:5555", cluster=None, devices=None, inputs=None, forward_only=False,
          refine_samples=None, timeout_ms=120000, keep_bytes=DEFAULT_KEEP_BYTES, max_message_bytes=None,
          max_deadline_ms=None, **fields):
    """Ask the service at ENDPOINT to place the program in PATH; returns the reply's result.

    cluster: a preset name ("k80x4") or cluster dict; or devices: "cpu:2".
    inputs: optional ["x:16x3x224x224:float", ...] for symbolic sizes.
    max_message_bytes: the server's limits.max_message_bytes (None: its default, 16 MiB); a larger
    request is not sent (the server would close the connection without a reply).
    max_deadline_ms: the server's limits.max_deadline_ms (None: its default, 600000), the most the
    request's deadline may be (by default timeout_ms less a margin); deadline_ms= sets it.
    Raises placer_client.PlacerError on an error reply, or with code "too_large" for a request over
    max_message_bytes (lower keep_bytes, or raise the server's limit)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from placer_client import DEFAULT_MAX_MESSAGE_BYTES, MAX_DEADLINE_MS, PlacerClient

    if max_message_bytes is None:
        max_message_bytes = DEFAULT_MAX_MESSAGE_BYTES
    if max_deadline_ms is None:
        max_deadline_ms = MAX_DEADLINE_MS

    if (cluster is None) == (devices is None):
        raise ValueError("give exactly one of cluster= and devices=")
    graph = {"pt2": base64.b64encode(structure_only(path, keep_bytes)).decode("ascii"), "forward_only": forward_only}
    if inputs:
        graph["inputs"] = list(inputs)
    request = {"graph": graph, "refine_samples": refine_samples, **fields}
    request["cluster" if cluster is not None else "devices"] = cluster if cluster is not None else devices
    with PlacerClient(endpoint, timeout_ms=timeout_ms, max_message_bytes=max_message_bytes,
                      max_deadline_ms=max_deadline_ms) as client:
        return client.call("place", **request)


def apply_split_spec(model, example_args, spec, n_microbatches, example_kwargs=None):
    """torch.distributed.pipelining.pipeline(model, ...) split as SPEC says; returns the Pipe.

    spec: the JSON file `--split-spec` wrote, its path or the dict. When the
    placement was not contiguous in module order it holds no runnable split:
    its contiguous_alternative is used instead, with a warning.
    example_args: a whole batch; its tensors are cut into n_microbatches along
    dimension 0 and the first micro-batch traces the model (pipeline() needs
    no process group). Wraps the forward of each split module in place, as
    pipeline() does. pipe.num_stages equals the spec's number of stages, or
    ValueError says why not (e.g. a module the model calls more than once)."""
    import torch
    from torch.distributed.pipelining import SplitPoint, pipeline

    if not isinstance(spec, dict):
        with open(spec) as f:
            spec = json.load(f)
    chosen = spec
    if not spec.get("contiguous", True):
        warnings.warn("placer split spec: " + spec.get("note", "not contiguous") + "; using contiguous_alternative")
        chosen = spec["contiguous_alternative"]
    split_spec = {fqn: SplitPoint[point] for fqn, point in chosen["split_spec"].items()}

    def first_microbatch(value):
        if not isinstance(value, torch.Tensor):
            return value
        if value.dim() == 0 or value.shape[0] % n_microbatches != 0:
            raise ValueError(f"a batch of {tuple(value.shape)} does not split into {n_microbatches} micro-batches")
        return value.chunk(n_microbatches)[0]

    mb_args = tuple(first_microbatch(a) for a in example_args)
    mb_kwargs = {k: first_microbatch(v) for k, v in (example_kwargs or {}).items()} or None
    pipe = pipeline(model, mb_args=mb_args, mb_kwargs=mb_kwargs, split_spec=split_spec)
    if pipe.num_stages != len(chosen["stages"]):
        raise ValueError(f"the pipe has {pipe.num_stages} stages, the split spec {len(chosen['stages'])}: "
                         "does the model call one of " + ", ".join(split_spec) + " more than once?")
    return pipe


def main():
    ap = argparse.ArgumentParser(description="Send a torch.export archive (.pt2) to a placer service.")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("place", help="place MODEL.pt2 and print the reply as JSON")
    p.add_argument("model", help="archive written by torch.export.save (or placer_export.export)")
    p.add_argument("--endpoint", default="tcp://127.0.0.1:5555")
    p.add_argument("--cluster", help="preset name, e.g. k80x4")
    p.add_argument("--devices", help="device list, e.g. cpu:2")
    p.add_argument("--input", action="append", default=[], help="NAME:SHAPE:DTYPE for a symbolic size; repeatable")
    p.add_argument("--forward-only", action="store_true", help="place the inference graph")
    p.add_argument("--refine-samples", type=int, help="local search samples after the fast path")
    p.add_argument("--no-placement", action="store_true", help="leave the op -> device map out of the output")
    p.add_argument("--max-message-bytes", type=int, help="the server's limits.max_message_bytes (default 16 MiB)")
    p.add_argument("--max-deadline-ms", type=int, help="the server's limits.max_deadline_ms (default 600000)")
    args = ap.parse_args()
    if (args.cluster is None) == (args.devices is None):
        ap.error("give exactly one of --cluster and --devices")
    result = place(args.model, args.endpoint, cluster=args.cluster, devices=args.devices, inputs=args.input,
                   forward_only=args.forward_only, refine_samples=args.refine_samples,
                   include_placement=not args.no_placement, max_message_bytes=args.max_message_bytes,
                   max_deadline_ms=args.max_deadline_ms)
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
