#!/usr/bin/env bash
# Rollouts on several processes over loopback: `placer train --workers-bind`
# with three `placer worker` processes. Worker C joins mid-run and holds the
# first task it gets (--slow-ms) until it is SIGKILLed: the batch it held
# still completes (its task goes to A or B once the pool finds C gone: its
# connection drops, or on a real network its heartbeats stop), the
# run has every sample, and its summary equals a local run's (simulated
# rewards are exact through workers). A and B stop cleanly on SIGTERM.
set -euo pipefail
PLACER=$(realpath "$1")
SRC=$(realpath "$2")
source "$SRC/tests/cli/lib/workers.sh"
WORK=$(mktemp -d)
TRAINER="" A="" B="" C=""
trap 'for p in $TRAINER $A $B $C; do kill -9 $p 2>/dev/null || true; wait $p 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
cd "$WORK"
# A malformed endpoint is an error naming the flag (it was std::terminate, the evaluating threads running).
set +e
"$PLACER" worker --connect garbage > bad_endpoint.out 2>&1
rc=$?
set -e
if [ $rc -eq 0 ] || [ $rc -ge 128 ] || ! grep -q "^error: --connect: cannot connect to 'garbage'" bad_endpoint.out; then
  echo "FAIL: worker --connect garbage: rc $rc: $(cat bad_endpoint.out)"; exit 1
fi
# `placer query`'s own flags are checked before anything is sent: builder options are integers (they were spliced
# into the request's JSON as given), a timeout is positive (-1 waited forever).
for args in "--timeout-ms -1 health" "place --builder mlp --option batch=4,\"layers\":5 --cluster k80x2" \
  "place --builder mlp --option layers= --cluster k80x2" "optimize --builder mlp --cluster k80x2 --seconds nan" \
  "place --builder mlp --option layers=2 --option layers=64 --cluster k80x2" "place --builder mlp --option =2 --cluster k80x2"; do
  set +e
  # shellcheck disable=SC2086
  timeout 10 "$PLACER" query --endpoint tcp://127.0.0.1:9 $args > bad_query.out 2>&1
  rc=$?
  set -e
  if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q -e "--timeout-ms\|--option\|--seconds" bad_query.out; then
    echo "FAIL: query $args: rc $rc: $(cat bad_query.out)"; exit 1
  fi
done
write_config run.yaml 150

"$PLACER" train -c run.yaml -o local -q > local.out 2>&1

start_trainer run.yaml remote 'tcp://127.0.0.1:*' 2
EP="tcp://127.0.0.1:$PORT"
"$PLACER" worker --connect "$EP" --name A > A.log 2>&1 & A=$!
"$PLACER" worker --connect "$EP" --name B --threads 2 > B.log 2>&1 & B=$!
wait_for_line remote/train.csv '^5,' 120          # training is under way on A and B
"$PLACER" worker --connect "$EP" --name C --slow-ms 600000 -v > C.log 2>&1 & C=$!
wait_for_line C.log 'task [0-9]* started' 60     # C now holds a task of a batch
sleep 0.5
kill -9 $C; wait $C 2>/dev/null || true; C=""
echo "C killed holding: $(grep -m1 'started' C.log)"
wait_trainer remote
grep -Eq "worker 'C' \(cpu:0,cpu:1\) (was lost|is unreachable)" remote.err || { echo "C's loss not reported:"; cat remote.err; exit 1; }
check_lost_and_resent remote
same_summary local remote
[ "$(wc -l < remote/train.csv)" -eq 151 ] || { echo "train.csv: expected 150 updates"; exit 1; }
for w in A B; do
  pid=${!w}
  kill -TERM "$pid"; rc=0; wait "$pid" || rc=$?
  [ $rc -eq 0 ] || { echo "worker $w exited $rc on SIGTERM:"; cat $w.log; exit 1; }
  grep -q 'stopped after' $w.log || { cat $w.log; exit 1; }
done
A="" B=""
echo "workers: OK"
