# Sourced by the service CLI tests. start_server CONFIG LOG: starts
# `$PLACER serve` in the background and sets SERVER (its pid) and ENDPOINT
# (the address it bound, read from its log); exits 1 if it does not start.
start_server() {
  : > "$2"  # exists before the first read: the background shell may open it after we look (set -e)
  "$PLACER" serve --config "$1" > "$2" 2>&1 &
  SERVER=$!
  ENDPOINT=""
  for _ in $(seq 100); do
    ENDPOINT=$(sed -n 's/^placer serve: listening on \(tcp:[^ ]*\).*/\1/p' "$2")
    [ -n "$ENDPOINT" ] && break
    sleep 0.1
  done
  [ -n "$ENDPOINT" ] || { echo "server did not start:"; cat "$2"; exit 1; }
  echo "server at $ENDPOINT"
}
