# Sourced by the worker CLI tests (workers.sh, workers_netns.sh).
#
# write_config FILE UPDATES: a small simulated training run (rnnlm, 135 ops)
# that keeps sampling new placements (hot, noisy), so every batch has tasks.
write_config() {
  cat > "$1" <<CFG
name: workers
graph:
  builder: rnnlm
  options: {layers: 1, hidden: 256, steps: 4, batch: 16}
cluster: k80x2
policy: {type: seq2seq, hidden: 32, max_groups: 64}
reward: {mode: simulated}
train: {updates: $2, samples_per_update: 16, temperature: 3.0, logit_noise: 1.0, logit_noise_decay: 1.0}
warm_start: {methods: [m_etf], bc_steps: 20}
run: {seed: 3, threads: 1, checkpoint_every: 1000}
compare: [single, expert]
CFG
}

# start_trainer CONFIG OUT BIND MIN_WORKERS: `placer train` with a worker pool
# in the background; sets TRAINER (pid) and PORT (the port it bound).
start_trainer() {
  "$PLACER" train -c "$1" -o "$2" -q --workers-bind "$3" --min-workers "$4" --workers-wait 120 > "$2.out" 2> "$2.err" &
  TRAINER=$!
  PORT=""
  for _ in $(seq 300); do
    # The background shell may not have created $2.err yet: a missing file is
    # "not bound yet", not a failure (set -e would end the test here).
    PORT=$(sed -n 's/^workers: connect with: placer worker --connect tcp:.*:\([0-9]*\).*/\1/p' "$2.err" 2>/dev/null || true)
    [ -n "$PORT" ] && break
    sleep 0.1
  done
  [ -n "$PORT" ] || { echo "trainer did not bind:"; cat "$2.err"; exit 1; }
  echo "trainer bound port $PORT"
}

# wait_for_line FILE PATTERN SECONDS: until a line of FILE matches.
wait_for_line() {
  for _ in $(seq $(($3 * 10))); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "no '$2' in $1 within $3 s:"; cat "$1"; return 1
}

# wait_trainer OUT: waits for the trainer (at most 300 s) and checks it exited 0.
wait_trainer() {
  for _ in $(seq 3000); do kill -0 "$TRAINER" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$TRAINER" 2>/dev/null; then echo "trainer still running after 300 s:"; cat "$1.err"; exit 1; fi
  local rc=0
  wait "$TRAINER" || rc=$?
  TRAINER=""
  [ $rc -eq 0 ] || { echo "trainer exited $rc:"; cat "$1.err" "$1.out"; exit 1; }
}

# same_summary A B: the two runs' summary.json agree on everything but wall
# times and the remote count (simulated rewards are exact through workers).
same_summary() {
  python3 - "$1/summary.json" "$2/summary.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def strip(s):
    s = dict(s)
    for k in ("train_seconds", "remote_evaluations"):
        s.pop(k, None)
    s["baselines"] = [{k: v for k, v in x.items() if k != "seconds"} for x in s["baselines"]]
    return s
if strip(a) != strip(b):
    for k in a:
        if strip(a).get(k) != strip(b).get(k):
            print("differs:", k, strip(a).get(k), strip(b).get(k))
    sys.exit(1)
print("summary equal to the local run's: samples", a["samples"], "best_step_s", a["best_step_s"])
PY
}

# check_workers_line OUT: the trainer's worker report shows a lost worker
# whose tasks were re-sent; prints the line.
check_lost_and_resent() {
  local line
  line=$(grep '^  workers: ' "$1.out") || { echo "no workers line:"; cat "$1.out"; exit 1; }
  echo "$line"
  local lost resent
  lost=$(echo "$line" | sed -n 's/.* \([0-9]*\) lost.*/\1/p')
  resent=$(echo "$line" | sed -n 's/.*(\([0-9]*\) re-sent.*/\1/p')
  [ "${lost:-0}" -ge 1 ] || { echo "expected a lost worker"; exit 1; }
  [ "${resent:-0}" -ge 1 ] || { echo "expected re-sent tasks"; exit 1; }
}
