#!/usr/bin/env bash
# Workers as separate hosts: two `placer worker` processes, each in its own
# network namespace joined to this one by a veth pair, reach `placer train`
# over those links only. Worker Y joins mid-run and holds the first task it
# gets (--slow-ms); then its link is cut (the host vanishes from the network:
# no connection reset, only silence), so the pool must notice the missing
# heartbeats and re-send Y's task to X. The run completes with every sample
# and a summary equal to a local run's. Needs root and network namespaces; where they are
# not permitted it prints SKIP and exits 77 (CTest: skipped).
set -euo pipefail
PLACER=$(realpath "$1")
SRC=$(realpath "$2")
source "$SRC/tests/cli/lib/workers.sh"
TAG=$(( $$ % 60000 ))
NS1="placer-wx-$TAG" NS2="placer-wy-$TAG"
H1="pwx$TAG" H2="pwy$TAG"          # host ends of the veth pairs (<= 15 characters)
NET1="10.213.$(( TAG % 250 ))" NET2="10.214.$(( TAG % 250 ))"
WORK=$(mktemp -d)
TRAINER="" X="" Y=""
cleanup() {
  for p in $TRAINER $X $Y; do kill -9 $p 2>/dev/null || true; wait $p 2>/dev/null || true; done
  ip netns del "$NS1" 2>/dev/null || true
  ip netns del "$NS2" 2>/dev/null || true
  ip link del "$H1" 2>/dev/null || true
  ip link del "$H2" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
if ! ip netns add "$NS1" 2> "$WORK/netns.err"; then
  echo "SKIP: network namespaces are not permitted here ($(head -1 "$WORK/netns.err")); ran nothing"
  exit 77
fi
# netns HOST_END NS NET: a veth pair, NET.1 on this side and NET.2 inside NS.
link() {
  ip link add "$1" type veth peer name "$1n"
  ip link set "$1n" netns "$2"
  ip addr add "$3.1/30" dev "$1"
  ip link set "$1" up
  ip netns exec "$2" ip addr add "$3.2/30" dev "$1n"
  ip netns exec "$2" ip link set "$1n" up
  ip netns exec "$2" ip link set lo up
}
if ! { ip netns add "$NS2" && link "$H1" "$NS1" "$NET1" && link "$H2" "$NS2" "$NET2"; } 2> "$WORK/veth.err"; then
  echo "SKIP: veth pairs into network namespaces are not permitted here ($(head -1 "$WORK/veth.err")); ran nothing"
  exit 77
fi
cd "$WORK"
write_config run.yaml 150
"$PLACER" train -c run.yaml -o local -q > local.out 2>&1

start_trainer run.yaml remote 'tcp://0.0.0.0:*' 1
# Separate hosts indeed: from inside a namespace the trainer is not on loopback.
if ip netns exec "$NS1" timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" 2>/dev/null; then
  echo "namespace $NS1 reaches this machine's loopback"; exit 1
fi
ip netns exec "$NS1" "$PLACER" worker --connect "tcp://$NET1.1:$PORT" --name X --threads 2 > X.log 2>&1 & X=$!
wait_for_line remote/train.csv '^5,' 120          # training is under way on X
ip netns exec "$NS2" "$PLACER" worker --connect "tcp://$NET2.1:$PORT" --name Y --slow-ms 600000 -v > Y.log 2>&1 & Y=$!
wait_for_line Y.log 'task [0-9]* started' 120
echo "Y holds: $(grep -m1 'started' Y.log); cutting its link"
ip link set "$H2" down
wait_trainer remote
grep -q "worker 'Y' (cpu:0,cpu:1) was lost" remote.err || { echo "Y's loss not reported:"; cat remote.err; exit 1; }
check_lost_and_resent remote
same_summary local remote
[ "$(wc -l < remote/train.csv)" -eq 151 ] || { echo "train.csv: expected 150 updates"; exit 1; }
kill -TERM $X; rc=0; wait $X || rc=$?; X=""
[ $rc -eq 0 ] || { echo "worker X exited $rc on SIGTERM:"; cat X.log; exit 1; }
echo "workers_netns: OK"
