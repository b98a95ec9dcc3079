#!/usr/bin/env bash
# `placer query` offers a flag only where the server reads it: --method on baselines and optimize, not on place
# (it was offered and sent, and the server ignored it; now the server refuses methods on a place request).
set -euo pipefail
PLACER="$1"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PLACER" query place --help > "$TMP/place_help"
! grep -qF -- "--method" "$TMP/place_help" || fail "query place --help offers --method: $(grep -F -- --method "$TMP/place_help")"
for q in baselines optimize; do
  "$PLACER" query $q --help > "$TMP/help"
  grep -qF -- "--method" "$TMP/help" || fail "query $q --help lacks --method"
done
# Refused here as any unknown option is, before anything is sent (nothing listens on port 1).
rc=0
"$PLACER" query --endpoint tcp://127.0.0.1:1 --timeout-ms 200 place --builder mlp --devices cpu:2 --method m_etf \
  > "$TMP/out" 2> "$TMP/err" || rc=$?
[ $rc -ne 0 ] && grep -qF -- "not expected: m_etf --method" "$TMP/err" ||
  fail "query place --method: exit $rc: $(head -c 400 "$TMP/err")"
echo "service_query_flags: OK"
