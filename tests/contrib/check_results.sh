# Sourced by contrib_ops.sh and ort_models.sh: checks `minfer test` output.
#
# check_results OUTPUT CASE_DIR... : every case must pass, except, while the
# plugin loader refuses plugin ops in the default domain (docs/plugins.md,
# plugins/contrib, "Default-domain ops"), the cases marked with a file
# needs_default_domain (they hold ORT's default-domain SimplifiedLayer-
# Normalization or LayerNormalization before opset 17): those must then be
# exactly the skipped ones, skipped for that reason. Once the loader
# registers those ops (minfer plugins lists them), every case must pass.
# Uses $minfer and $plugin.
check_results() {
  local out=$1; shift
  local total blocked=() d
  total=$(find "$@" -name model.onnx | wc -l)
  if "$minfer" plugins --plugin "$plugin" --json 2>/dev/null |
      grep -qE '"(ai\.onnx)?:SimplifiedLayerNormalization '; then
    echo "$out" | grep -q "^$total passed, 0 failed, 0 skipped" && return 0
    echo "FAIL: expected $total passed"; return 1
  fi
  while IFS= read -r d; do blocked+=("$(dirname "$d")"); done \
    < <(find "$@" -name needs_default_domain | sort)
  local want=$(( total - ${#blocked[@]} ))
  echo "$out" | grep -q "^$want passed, 0 failed, ${#blocked[@]} skipped" ||
    { echo "FAIL: expected $want passed, ${#blocked[@]} skipped"; return 1; }
  for d in "${blocked[@]}"; do
    echo "$out" | grep -F "SKIP $d" | grep -q "no loaded plugin has :" ||
      { echo "FAIL: $d was not skipped for the default-domain op"; return 1; }
  done
  echo "BLOCKED: ${#blocked[@]} cases need ORT's default-domain ops, which the plugin loader" \
       "refuses to register (docs/plugins.md, plugins/contrib); all the others passed"
  return 0
}
