#!/usr/bin/env bash
# Bisect each bounded bug of the catalog from one good and one bad release, over the
# published records (results/published), and write each report to results/published/bisect/.
# torch-tensorrt bugs bisect over its releases on the stand-in lane: a probe is a published
# cell made without onnx (another key), so its record goes to a throw-away folder, not beside
# the published one it repeats (it would take that cell out of the page's published scope);
# torch and torchvision bugs bisect over torch releases (torchvision paired) on stacks of
# their own, recorded in results/published.
# Usage: scripts/publish-bisects.sh [REPRO-GLOB...]   (REPROMATRIX_VENV_DIR: where probes'
# environments are made, each ~4 GB; PUBLISH_RESULTS: another results folder for the torch
# probes' records, e.g. while results/published is being written: merge it in with
# `repromatrix store merge`)
set -uo pipefail
cd "$(dirname "$0")/.."
out=results/published/bisect
results=${PUBLISH_RESULTS:-results/published}
lane_probes=$(mktemp -d /tmp/repromatrix-lane-probes.XXXXXX)
trap 'rm -rf "$lane_probes"' EXIT
lane=(--axis torch_tensorrt --standin tensorrt --with torchvision --base index=pypi)
cpu=(--axis torch --base index=pypi --base torch_tensorrt=none)
# onnxscript bugs bisect over onnxscript releases on torch 2.9.1 (stacks of their own, recorded
# in results/published); onnxscript 0.5.x needs the onnx-ir of its day (results/published/README.md)
osc=(--axis onnxscript --base torch=2.9.1 --base index=pypi)
# repro, report name, bisect arguments (one line a bisect). The good bound is a release whose
# published record decides: 2.5.0 for the torch-tensorrt fixes of that release (for
# require_full_compilation the lane cannot tell from 2.8.0: compile asks the GPU for its free
# memory at 2.8.0 and 2.9.0, and its lowering meets two fake modes from 2.10.0)
bisects=(
  "ts_device_gpu_id|regression|${lane[*]} --good 2.2.0 --bad 2.14.0"
  "deform_conv2d_device|regression|${lane[*]} --good 2.3.0 --bad 2.4.0"
  "deform_conv2d_device|fix|${lane[*]} --find-fix --bad 2.4.0 --good 2.6.1"
  "dynamo_global_partitioner_module_children|fix|${lane[*]} --find-fix --bad 2.3.0 --good 2.5.0"
  "dynamo_trace_mixed_static_dynamic_inputs|fix|${lane[*]} --find-fix --bad 2.2.0 --good 2.5.0"
  "dynamo_require_full_compilation_ignored|fix|${lane[*]} --find-fix --bad 2.2.0 --good 2.5.0"
  "ts_dla_memory_sizes_ignored|fix|${lane[*]} --find-fix --bad 2.2.0 --good 2.5.0"
  "onnx_ts_rshift_signed|fix|${cpu[*]} --base torchvision=none --find-fix --bad 2.13.0 --good 2.14.1"
  "export_dynamic_shapes_var_kwargs|fix|${cpu[*]} --base torchvision=none --find-fix --bad 2.13.0 --good 2.14.1"
  "export_dynamic_shapes_var_kwargs_nested|fix|${cpu[*]} --base torchvision=none --find-fix --bad 2.13.0 --good 2.14.1"
  "onnx_dynamic_axes_names_dropped|fix|${cpu[*]} --base torchvision=none --find-fix --bad 2.9.1 --good 2.12.1"
  "onnx_export_fallback_removed|regression|${cpu[*]} --base torchvision=none --good 2.9.1 --bad 2.12.1"
  "pt2e_quant_removed|regression|${cpu[*]} --base torchvision=none --good 2.9.1 --bad 2.12.1"
  "tv_masks_to_boxes_empty|fix|${cpu[*]} --with torchvision --find-fix --bad 2.9.1 --good 2.12.1"
  "trt_save_torchscript_refused|regression|${lane[*]} --good 2.7.0 --bad 2.8.0"
  "trt_import_root_logger|fix|${lane[*]} --find-fix --bad 2.4.0 --good 2.5.0"
  "trt_convert_method_inputs_dropped|fix|${lane[*]} --find-fix --bad 2.5.0 --good 2.6.0"
  "export_capture_pre_autograd_graph_removed|regression|${cpu[*]} --base torchvision=none --good 2.6.0 --bad 2.7.0"
  "export_program_call_removed|regression|${cpu[*]} --base torchvision=none --good 2.2.2 --bad 2.3.0"
  "trt_save_torchscript_refused|fix|${lane[*]} --find-fix --bad 2.13.0 --good 2.14.0"
  "onnx_fuse_batchnorm_bias_collision|regression|${osc[*]} --base packages=onnx-ir==0.1.12 --good 0.4.0 --bad 0.5.6"
  "onnx_fuse_batchnorm_bias_collision|fix|${osc[*]} --base packages=onnx-ir==0.1.12 --find-fix --bad 0.5.6 --good 0.5.7"
  "onnx_gru_linear_before_reset|fix|${osc[*]} --find-fix --bad 0.7.0 --good 0.7.1"
  "onnx_unbind_size_one|regression|${osc[*]} --base packages=onnx-ir==0.1.12 --good 0.5.3 --bad 0.5.6"
  "onnx_unbind_size_one|fix|${osc[*]} --base packages=onnx-ir==0.1.12 --find-fix --bad 0.5.6 --good 0.5.7"
  "trt_unbacked_output_shape|fix|${lane[*]} --find-fix --bad 2.5.0 --good 2.6.0"
  "trt_full_like_decomposition|fix|${lane[*]} --find-fix --bad 2.7.0 --good 2.8.0"
  "trt_save_retrace_needs_inputs|regression|${lane[*]} --good 2.9.0 --bad 2.10.0"
  "onnx_export_dynamo_default|regression|${cpu[*]} --base torchvision=none --good 2.8.0 --bad 2.9.0"
  "export_strict_default_changed|regression|${cpu[*]} --base torchvision=none --good 2.7.1 --bad 2.8.0"
  "onnx_export_unknown_kwargs_refused|regression|${cpu[*]} --base torchvision=none --good 2.6.0 --bad 2.7.0"
)
status=0
for line in "${bisects[@]}"; do
  IFS='|' read -r repro name args <<<"$line"
  if [ $# -gt 0 ]; then
    keep=0; for glob in "$@"; do [[ $repro == $glob ]] && keep=1; done
    [ $keep = 1 ] || continue
  fi
  echo "== $repro ($name) $(date -u +%H:%M:%S)"
  store=$results
  [[ $args == *--standin* ]] && store=$lane_probes
  # shellcheck disable=SC2086  # $args is a list of words
  if ! repromatrix bisect --repro "$repro" $args --backend venv --results "$store" \
      >"$out/$repro-$name.txt" 2>&1; then
    echo "!! $repro: bisect exited $? (see $out/$repro-$name.txt)"; status=1
  fi
  grep -E '^- (first|last) (bad|good):' "$out/$repro-$name.txt" | cut -c1-60
done
exit $status
