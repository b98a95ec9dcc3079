#!/usr/bin/env python3
"""Example: ask a running `placer serve` for placements from Python.

    placer serve --config configs/service.yaml &
    python3 clients/python/example.py tcp://127.0.0.1:5555

Prints one line per step and exits non-zero if anything is wrong, so it
doubles as the end-to-end test of the Python client (tests/cli/service_python.sh).
"""

import sys
import time

from placer_client import PlacerClient, PlacerError


def main(endpoint):
    with PlacerClient(endpoint, timeout_ms=60000) as c:
        h = c.health()
        print(f"health: {h['status']}, protocol {h['protocol_version']}, {h['workers']} workers")

        mlp = dict(builder="mlp", options={"layers": 3, "width": 128, "input": 128, "batch": 16})
        r = c.place(cluster="k80x2", **mlp)
        assert r["status"] == "ok" and r["step_s"] >= r["lower_bound_s"] > 0, r
        assert len(r["placement"]["device"]) == r["ops"], "one device per op"
        print(f"place: {r['graph']} ({r['ops']} ops) on {r['cluster']}: {r['method']} "
              f"{r['step_s'] * 1e3:.3f} ms (lower bound {r['lower_bound_s'] * 1e3:.3f} ms, "
              f"best baseline {r['best_baseline']['method']} {r['best_baseline']['step_s'] * 1e3:.3f} ms)")

        b = c.baselines(devices="cpu:2", methods=["single", "round_robin", "m_etf"], **mlp)
        for res in b["results"]:
            print(f"baseline {res['method']}: {res['status']} {res['step_s']}")

        # The reply's placement, evaluated again, gives the same step time.
        e = c.evaluate(r["placement"], cluster="k80x2", **mlp)
        assert abs(e["step_s"] - r["step_s"]) <= 1e-12 * max(1.0, r["step_s"]), (e, r)
        print(f"evaluate: {e['step_s'] * 1e3:.3f} ms (same as place)")

        try:
            c.place(cluster="no-such-cluster", **mlp)
            raise AssertionError("expected an error reply")
        except PlacerError as err:
            assert err.code == "bad_cluster" and err.field == "cluster", err
            print(f"error reply as expected: {err}")

        job = c.optimize(samples=200, cluster="k80x4", **mlp)
        print(f"optimize: job {job}")
        for _ in range(600):
            s = c.status(job)
            if s["state"] in ("done", "failed", "cancelled"):
                break
            time.sleep(0.1)
        assert s["state"] == "done", s
        res = c.result(job)
        assert res["best"]["step_s"] <= res["start"]["step_s"] * (1 + 1e-12), res
        print(f"job {job}: {res['progress']['samples']} samples, best {res['best']['method']} "
              f"{res['best']['step_s'] * 1e3:.3f} ms (started from {res['start']['method']} "
              f"{res['start']['step_s'] * 1e3:.3f} ms)")
    print("example: OK")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tcp://127.0.0.1:5555")
