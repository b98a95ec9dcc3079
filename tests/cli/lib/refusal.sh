# Sourced by the CLI tests of refusals (baseline_cli.sh, refusals_cli.sh); needs PLACER, TMP and fail().
# expect_refusal NAME "TEXT" ARGS...: `$PLACER ARGS` exits 2 (a refused option or input) with TEXT on stderr.
expect_refusal() {
  local name=$1 text=$2 rc=0
  shift 2
  "$PLACER" "$@" > "$TMP/out" 2> "$TMP/err" || rc=$?
  [ $rc -eq 2 ] || fail "$name: exit $rc, expected 2 ($(head -c 400 "$TMP/err"))"
  grep -qF -- "$text" "$TMP/err" || fail "$name: stderr lacks '$text': $(head -c 400 "$TMP/err")"
}
