"""Python client for the placer placement service (protocol version 1).

Needs only pyzmq (Debian: python3-zmq). Every request method returns the
reply's "result" object as a dict, but optimize(), which returns the job's id (a
string), and wait(), which returns the job's last status; or raises PlacerError
(an error reply, or code "too_large" for a request over max_message_bytes, not
sent), PlacerBusy (the server's queue is full: retry later) or PlacerTimeout.

    from placer_client import PlacerClient
    with PlacerClient("tcp://127.0.0.1:5555") as c:
        r = c.place(builder="nmt", options={"layers": 2}, cluster="k80x4")
        print(r["method"], r["step_s"], r["best_baseline"])
        # Judged as one pipelined mini-batch of 8 micro-batches under 1F1B:
        r = c.place(builder="nmt", cluster="k80x4", objective="pipeline", microbatches=8, schedule="1f1b")

place, baselines, evaluate and optimize take objective= ("step", the default, or
"pipeline"), microbatches= (>= 1, default 4) and schedule= ("gpipe" or "1f1b",
the default); left out, the server's defaults apply. Replies say "objective"
(and with a pipeline "microbatches", "schedule" and the "pipeline" figures).
With builder=, forward_only=True sends graph.forward_only: the builder's inference
graph (no backward or update ops; it cannot be pipelined).

Deadlines: every request carries "deadline_ms", by default the client's wait
(timeout_ms) less a margin (a tenth, at most 2 s), so that the server gives up
first, and at most max_deadline_ms (default 600000, the server's default
limits.max_deadline_ms: give the server's own when its config sets it lower, or
every request is refused as too_large). Each method's deadline_ms= sets one call's.
See docs/protocol.md for every message.
"""

import itertools
import json
import os
import time

import zmq

PROTOCOL_VERSION = 1


class PlacerError(Exception):
    """An error reply: .code ("bad_graph", ...), .field ("graph.inline") and the message."""

    def __init__(self, code, field, message, reply=None):
        super().__init__(f"{code}: {field + ': ' if field else ''}{message}")
        self.code = code
        self.field = field
        self.message = message
        self.reply = reply


class PlacerBusy(PlacerError):
    pass


# The server refuses deadlines above its limits.max_deadline_ms (default 600 s) as too_large: the client's
# default for max_deadline_ms= (give the server's when its config sets it lower).
MAX_DEADLINE_MS = 600000
# The server's limits.max_message_bytes default (16 MiB): ZeroMQ drops a larger message without a reply, so
# the client refuses to send one (max_message_bytes= when the server's config sets another limit).
DEFAULT_MAX_MESSAGE_BYTES = 16 << 20


class PlacerTimeout(Exception):
    pass


class PlacerClient:
    def __init__(self, endpoint, timeout_ms=30000, server_public_key=None, client_public_key=None,
                 client_secret_key=None, context=None, max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
                 max_deadline_ms=MAX_DEADLINE_MS):
        if isinstance(max_deadline_ms, bool) or not isinstance(max_deadline_ms, int) or max_deadline_ms < 1:
            raise ValueError("max_deadline_ms: expected an integer >= 1 (the server's limits.max_deadline_ms), "
                             f"got {max_deadline_ms!r}")
        self.endpoint = endpoint
        self.timeout_ms = timeout_ms
        self.max_message_bytes = max_message_bytes
        self.max_deadline_ms = max_deadline_ms
        self._curve = (server_public_key, client_public_key, client_secret_key)
        self._ctx = context or zmq.Context.instance()
        self._ids = itertools.count(1)
        self._socket = None
        self._connect()

    def _connect(self):
        if self._socket is not None:
            self._socket.close(linger=0)
        s = self._ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        server_key, public, secret = self._curve
        if server_key or public or secret:
            if not (server_key and public and secret):
                raise ValueError("CurveZMQ needs the server public key and the client key pair")
            s.curve_serverkey = _key(server_key)
            s.curve_publickey = _key(public)
            s.curve_secretkey = _key(secret)
        s.connect(self.endpoint)
        self._socket = s

    def close(self):
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- transport ---------------------------------------------------------
    def call(self, type_, **fields):
        """Sends one request and returns the reply's "result"."""
        request_id = f"py-{next(self._ids)}"
        message = {"version": PROTOCOL_VERSION, "id": request_id, "type": type_}
        message.update({k: v for k, v in fields.items() if v is not None})
        # The server's deadline ends before this client stops waiting: with the server's default (30 s, this
        # client's default wait too) an optimize could make its job after the client had given up (and a
        # retry made a second one), or a result be handed over and forgotten unseen. Never over the server's
        # max_deadline_ms, which refuses a longer one.
        margin = min(2000, self.timeout_ms // 10)
        message.setdefault("deadline_ms", max(1, min(self.max_deadline_ms, self.timeout_ms - margin)))
        reply = self.send_raw(json.dumps(message).encode(), expect_id=request_id)
        status = reply.get("status")
        if status == "ok":
            return reply["result"]
        err = reply.get("error", {})
        cls = PlacerBusy if status == "busy" else PlacerError
        raise cls(err.get("code", "?"), err.get("field", ""), err.get("message", ""), reply)

    def send_raw(self, data, expect_id=None):
        """Sends bytes as they are; returns the decoded JSON reply.

        expect_id: the request's id; a reply with another id (the late answer to an earlier call that was
        interrupted) is dropped and the wait goes on for the rest of the timeout. A reply with id "" (the
        server could not read the request's) is taken as this one's. Raises PlacerError "too_large" before
        sending more than max_message_bytes (the server would drop the connection without a reply)."""
        if len(data) > self.max_message_bytes:
            raise PlacerError("too_large", "", f"the request is {len(data)} bytes, over the server's "
                              f"max_message_bytes {self.max_message_bytes} ({len(data) / 2**20:.1f} MiB > "
                              f"{self.max_message_bytes / 2**20:.1f} MiB): not sent")
        try:
            self._socket.send_multipart([b"", data])
            deadline = time.monotonic() + self.timeout_ms / 1000.0
            while True:
                left_ms = max(0, int((deadline - time.monotonic()) * 1000))
                if not self._socket.poll(left_ms, zmq.POLLIN):
                    self._connect()  # a late reply must not answer the next request
                    raise PlacerTimeout(f"no reply from {self.endpoint} within {self.timeout_ms} ms")
                reply = json.loads(self._socket.recv_multipart()[-1])
                if expect_id is None or reply.get("id") in (expect_id, ""):
                    return reply
                # A stale reply, for a call that gave up before it came: drop it and keep waiting.
        except PlacerTimeout:
            raise
        except BaseException:
            # Interrupted between send and receive (Ctrl-C, a signal handler, a bad reply): this request's
            # reply may still come; a fresh socket makes sure it never answers the next call.
            self._connect()
            raise

    # -- requests ----------------------------------------------------------
    def health(self, deadline_ms=None):
        return self.call("health", deadline_ms=deadline_ms)

    def policies(self, deadline_ms=None):
        return self.call("policies", deadline_ms=deadline_ms)

    def place(self, graph=None, builder=None, options=None, cluster=None, devices=None, policy=None,
              refine_samples=None, include_placement=True, deadline_ms=None, seed=None, objective=None,
              microbatches=None, schedule=None, forward_only=None):
        return self.call("place", **_problem(graph, builder, options, cluster, devices, forward_only), policy=policy,
                         refine_samples=refine_samples, include_placement=include_placement,
                         deadline_ms=deadline_ms, seed=seed, objective=objective, microbatches=microbatches,
                         schedule=schedule)

    def baselines(self, graph=None, builder=None, options=None, cluster=None, devices=None, methods=None,
                  include_placement=False, seed=None, objective=None, microbatches=None, schedule=None,
                  forward_only=None, deadline_ms=None):
        return self.call("baselines", **_problem(graph, builder, options, cluster, devices, forward_only),
                         methods=methods, include_placement=include_placement, seed=seed, objective=objective,
                         microbatches=microbatches, schedule=schedule, deadline_ms=deadline_ms)

    def evaluate(self, placement, graph=None, builder=None, options=None, cluster=None, devices=None,
                 objective=None, microbatches=None, schedule=None, measure=None, forward_only=None,
                 deadline_ms=None):
        """placement: {"device": {op name: device name}} (a `place` reply's placement), or a placer
        placement file (`placer place -o`: {"format": "placer.placement", "placement": {op: device}}),
        loaded or its path. Anything else is a ValueError.

        measure: True, or settings {"max_steps": 20, "target": 0.02, "budget_s": 30, ...}, to run
        it for real on the server's own devices (median step, 95% interval) instead of simulating;
        the measurement ends within the request's deadline (deadline_ms=)."""
        return self.call("evaluate", **_problem(graph, builder, options, cluster, devices, forward_only),
                         placement={"device": _device_map(placement)}, objective=objective,
                         microbatches=microbatches, schedule=schedule, measure=measure, deadline_ms=deadline_ms)

    def optimize(self, samples=0, seconds=0.0, graph=None, builder=None, options=None, cluster=None,
                 devices=None, methods=None, seed=None, learned=None, reward_mode=None, save_as=None,
                 objective=None, microbatches=None, schedule=None, forward_only=None, deadline_ms=None):
        """Starts a job; returns its id (a string), not the reply's result.

        A search job runs `methods`. A learned job trains a policy: `learned` is a
        policy type ("seq2seq", "hierarchical", "gnn") or a dict in the schema of
        `placer train` configs without graph, cluster and paths, e.g.
        {"policy": {"type": "seq2seq"}, "train": {"lr": 0.005}, "warm_start": {"methods": ["m_etf"]}}.
        reward_mode: "simulated", or "measured"/"hybrid" on the server's devices
        (when its config allows). save_as keeps the result as a named policy.
        A learned job's `best` is the fastest placement it saw (its policy's, its
        trainer's baselines', or the service's fast-path answer): `best.found_by` is
        "policy", "baseline" or "fast_path"; `policy_best` is the policy's own.
        objective/microbatches/schedule: what the job optimizes; a learned config's
        reward.objective/microbatches/schedule fill in what these leave out and must
        agree with what they give."""
        r = self.call("optimize", **_problem(graph, builder, options, cluster, devices, forward_only),
                      budget={"samples": samples, "seconds": seconds}, methods=methods, seed=seed,
                      learned=learned, reward_mode=reward_mode, save_as=save_as, objective=objective,
                      microbatches=microbatches, schedule=schedule, deadline_ms=deadline_ms)
        return r["job_id"]

    def wait(self, job_id, poll_s=0.5, timeout_s=None, on_status=None, deadline_ms=None):
        """Polls `status` until the job finishes; returns its last status.
        on_status(status) is called after every poll (progress, reward curve); deadline_ms: each poll's."""
        start = time.monotonic()
        while True:
            st = self.status(job_id, deadline_ms=deadline_ms)
            if on_status:
                on_status(st)
            if st["state"] in ("done", "failed", "cancelled"):
                return st
            if timeout_s is not None and time.monotonic() - start > timeout_s:
                raise PlacerTimeout(f"job {job_id} still {st['state']} after {timeout_s} s")
            time.sleep(poll_s)

    def status(self, job_id, deadline_ms=None):
        return self.call("status", job_id=job_id, deadline_ms=deadline_ms)

    def result(self, job_id, include_placement=True, deadline_ms=None):
        return self.call("result", job_id=job_id, include_placement=include_placement, deadline_ms=deadline_ms)

    def cancel(self, job_id, deadline_ms=None):
        return self.call("cancel", job_id=job_id, deadline_ms=deadline_ms)


def _key(k):
    return k.encode() if isinstance(k, str) else k


def _device_map(placement):
    """The {op: device} map of a `place` reply's placement or of a placer.placement file (dict or path)."""
    if isinstance(placement, (str, os.PathLike)):
        with open(placement) as f:
            placement = json.load(f)
    if isinstance(placement, dict) and isinstance(placement.get("device"), dict):
        return placement["device"]
    if isinstance(placement, dict) and placement.get("format") == "placer.placement":
        if isinstance(placement.get("placement"), dict):
            return placement["placement"]
        raise ValueError('placement: a placer.placement file without its "placement" object {op: device}')
    got = f"an object with keys {sorted(placement)[:5]}" if isinstance(placement, dict) else type(placement).__name__
    raise ValueError('placement: expected {"device": {op: device}} (a place reply\'s placement) or a placer '
                     f'placement file ("format": "placer.placement", "placement": {{op: device}}), got {got}')


def _problem(graph, builder, options, cluster, devices, forward_only=None):
    """graph: a graph dict (the placer.graph JSON format); or builder + options (+ forward_only)."""
    if (graph is None) == (builder is None):
        raise ValueError("give exactly one of graph= and builder=")
    if forward_only is not None and graph is not None:
        raise ValueError("forward_only: only with builder= (an inline graph is sent as it is)")
    g = {"inline": graph} if graph is not None else {"builder": builder, "options": options or {}}
    if forward_only is not None:
        g["forward_only"] = bool(forward_only)
    if (cluster is None) == (devices is None):
        raise ValueError("give exactly one of cluster= (preset name or cluster dict) and devices=")
    out = {"graph": g}
    if cluster is not None:
        out["cluster"] = cluster
    else:
        out["devices"] = devices
    return out
