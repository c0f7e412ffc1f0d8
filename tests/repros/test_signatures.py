"""Every repro signature against real text: one positive, and a near miss it must refuse.

Texts are either recorded here from real torch runs of the repros' CPU stages (the stage's
``evidence.exception``; torch 2.9.1+cu128, 2.12.1+cu130, 2.13.0+cpu, 2.14.1+cu130 on a CPU
host) or quoted from the upstream threads and the dossier; each case names its source. The
live runs in tests/repros/test_repros.py check the same signatures on the interpreters at hand.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

REPROS = Path(__file__).resolve().parents[2] / "repros"
sys.path.insert(0, str(REPROS))
sys.path.insert(0, str(REPROS / "harness"))

import protocol  # noqa: E402

from repromatrix.config.catalog import load_catalog  # noqa: E402

IDS = list(load_catalog(REPROS))  # every repro of the catalog, as the host finds them

# recorded with TensorRT stood in (repromatrix run --backend venv --standin tensorrt)
_NO_GRAPH = "builtins.AttributeError: 'Module' object has no attribute 'graph'"
_NODE_ARITY = "builtins.ValueError: Node arity mismatch; expected 2, but got 1."
_TOO_FEW = ("torch._dynamo.exc.UserError: Expected ({0: <class 'torch_tensorrt.dynamo._tracer._0'>},) "
            "to have 2 items")
# recorded: deform_conv2d_device/emulated_trt240_decomposition (the FX node, then the user frame)
_DEFORM_NODE = ("\n\nWhile executing %deform_conv2d : [num_users=1] = call_function[target=torch.ops."
                "torchvision.deform_conv2d.default](args = (%x, %deform_conv_weight, %conv2d, %zeros, "
                "%deform_conv_bias, 1, 1, 1, 1, 1, 1, 1, 1, False), kwargs = {})\nOriginal traceback:\n"
                'File "/work/repros/deform_conv2d_device.py", line 121, in forward\n'
                "    return deform_conv2d(x, offset, self.deform_conv.weight, self.deform_conv.bias,")
# the same failure on another node, in the same file: the file name must not count
_CONV_NODE = _DEFORM_NODE.replace(
    "%deform_conv2d : [num_users=1] = call_function[target=torch.ops.torchvision.deform_conv2d.default]",
    "%conv2d : [num_users=1] = call_function[target=torch.ops.aten.conv2d.default]")
_MISMATCH_14 = ("torch._subclasses.fake_tensor.FakeTensorDeviceMismatchError: Expected all tensors to be "
                "on the same device, but found at least two devices, %s!")
_STEP1 = ("torch.onnx._internal.exporter._errors.TorchExportError: Failed to export the model with "
          "torch.export. This is step 1/3 of exporting the model to ONNX. Next steps:\n...\n")
_TS = ("torch.jit.Error: The following operation failed in the TorchScript interpreter.\nTraceback of "
       "TorchScript (most recent call last):\n  File \"code/__torch__.py\", line 12, in forward\n")
_WILDCARD = ("ERROR: [Torch-TensorRT TorchScript Conversion Context] - 4: [shuffleNode.cpp::symbolicExecute]"
             " Error Code 4: Shape Error (reshape dimension with more than one -1 wildcard. Reshaping "
             "[21,3,(# 2 (SHAPE input_0)),(# 3 (SHAPE input_0))] to [1,21,3,-1,-1].)")

# recorded by `repromatrix run --backend venv --standin tensorrt` (torch-tensorrt 2.4.0, 2.3.0)
_HYBRID = ("protocol.CheckFailed: check failed: require_full_compilation=True leaves no PyTorch-run "
           "segment pytorch_segments=['_run_on_gpu_1']")
_DLA = ("protocol.CheckFailed: check failed: the compile spec carries the DLA memory sizes passed passed="
        "{'dla_sram_size': 2097152, 'dla_local_dram_size': 2147483648, 'dla_global_dram_size': 1073741824}, "
        "spec={'dla_sram_size': 1048576, 'dla_local_dram_size': 1073741824, "
        "'dla_global_dram_size': 536870912}")

# recorded on a CPU host: pt2e_quant_removed/pt2e_quantize (torch 2.12.1),
# tv_masks_to_boxes_empty/masks_to_boxes (torchvision 0.24.1)
_NO_PT2E = "builtins.ModuleNotFoundError: No module named 'torch.ao.quantization.quantize_pt2e'"
_MIN_NO_DIM = ("builtins.RuntimeError: min(): Expected reduction dim to be specified for input.numel() == 0. "
               "Specify the reduction dim with the 'dim' argument.")

# recorded on a CPU host (torch 2.9.1; 2.8.0 and 2.14.1 the same): the capture and call stages
_NO_CAPTURE = ("builtins.ImportError: cannot import name 'capture_pre_autograd_graph' from 'torch._export' "
               "(/venv/lib/python3.11/site-packages/torch/_export/__init__.py)")
_EP_CALL = ("builtins.RuntimeError: Unable to call ExportedProgram directly. You should use "
            "`exported_program.module()` instead.")
# recorded on a CPU host (torch 2.9.1; 2.9.0 and 2.14.1 the same): onnx_export_dynamo_default's
# default_export and export_strict_default_changed's default_export
_DYNAMO_DEFAULT = ("_stages.CheckFailed: check failed: a plain torch.onnx.export(model, args, f) ran the "
                   "TorchScript exporter (returned None, wrote only f) returned=ONNXProgram, "
                   "files=['model.onnx', 'model.onnx.data']")
_NON_STRICT_NUMPY = "builtins.RuntimeError: .numpy() is not supported for tensor subclasses."
# recorded on a CPU host (torch 2.9.1; 2.14.1 the same): onnx_export_unknown_kwargs_refused
_STALE_KEYWORD = "builtins.TypeError: export() got an unexpected keyword argument 'example_outputs'"
# recorded with TensorRT stood in: trt_save_torchscript_refused/save_torchscript_standin (2.8.0)
# recorded with TensorRT stood in: trt_import_root_logger/import_root_logger_standin (2.2.0)
_ROOT_INFO = ("_stages.CheckFailed: check failed: the root logger keeps the application's level before="
              "{'level': 'WARNING', 'handlers': []}, after={'level': 'INFO', 'handlers': ['StreamHandler']}")
_BASIC_CONFIG = "torch_tensorrt/fx/__init__.py:16 in <module>: logging.basicConfig(level=logging.INFO)"
# recorded with TensorRT stood in: trt_convert_method_inputs_dropped/convert_method_inputs_standin (2.5.0)
_NO_INPUTS = ("_stages.CheckFailed: check failed: the compile spec carries the inputs passed passed=1, "
              "spec=[]")
_SPEC_270 = ("torch_tensorrt/ts/_compiler.py:270 in convert_method_to_trt_engine: module._c, method_name, "
             "_parse_compile_spec(compile_spec)")
_TS_FORMAT = ("builtins.ValueError: Provided model is a torch.jit.ScriptModule but the output_format "
              "specified is not torchscript. Other output formats are not supported")

# recorded with TensorRT stood in: trt_unbacked_output_shape/unbacked_output_standin (2.5.0)
_SYMBOLS_TO_INT = "builtins.TypeError: Cannot convert symbols to int"
_VAR_RANGE_327 = ("torch_tensorrt/dynamo/utils.py:327 in extract_var_range_info: min_val, max_val, opt_val = "
                  "int(var_range.lower), int(var_range.upper), int(var_val)")
# recorded with TensorRT stood in: trt_full_like_decomposition/full_like_standin (2.6.0)
_FULL_LIKE_DTYPE = ("_stages.CheckFailed: check failed: the decomposed full_like keeps the dtype it "
                    "was given given=torch.int64, found=torch.float32")
_POST_LOWERING_678 = "torch_tensorrt/dynamo/_compiler.py:678 in compile: gm = post_lowering(gm, settings)"
# recorded with TensorRT stood in: trt_save_retrace_needs_inputs/save_no_inputs_standin (2.10.0, 2.14.0;
# 2.5.0's older check)
_RETRACE_EMPTY = ("builtins.ValueError: Provided model is a torch.fx.GraphModule and retrace is "
                  "True, however the inputs or arg_inputs are empty. Please provide valid "
                  "torch.tensors as inputs or "
                  "arg_inputs to trace and save the model")
_RETRACE_NO_SPECS = ("builtins.ValueError: Provided model is a torch.fx.GraphModule without existing "
                     "shape metadata and retrace is True, however no inputs specs were provided. Please "
                     "provide valid torch.Tensors or torch_tensorrt.Input objects as inputs to retrace "
                     "and save the model")
_GM_INPUTS_EMPTY = ("builtins.ValueError: Provided model is a torch.fx.GraphModule however the "
                    "inputs are empty. Please provide valid torch.tensors as inputs to trace and "
                    "save the model")

# (repro, exception types, text, stage, torch version, log, expected signature or None, source)
CASES = [
    # ---- deform_conv2d_device
    ("deform_conv2d_device", ["RuntimeError"],
     "builtins.RuntimeError: Unhandled FakeTensor Device Propagation for torchvision.deform_conv2d.default, "
     "found two different devices cuda:0, cpu" + _DEFORM_NODE, "emulated_trt240_decomposition", "2.9.1", "",
     "fake_device_propagation", "recorded, torch 2.9.1 (and the reporter's text, TRT #3556)"),
    ("deform_conv2d_device", ["RuntimeError"],
     "builtins.RuntimeError: Unhandled FakeTensor Device Propagation for aten.add.Tensor, found two "
     "different devices cuda:0, cpu" + _DEFORM_NODE, "trt_compile", "2.4.1", "", None,
     "near miss: another op's propagation error (WhiteFox records, aten.add)"),
    ("deform_conv2d_device", ["FakeTensorDeviceMismatchError", "RuntimeError"],
     _MISMATCH_14 % "cuda:0 and cpu" + _DEFORM_NODE, "emulated_trt240_decomposition", "2.14.1", "",
     "fake_device_mismatch", "recorded, torch 2.14.1"),
    ("deform_conv2d_device", ["FakeTensorDeviceMismatchError", "RuntimeError"],
     _MISMATCH_14 % "cuda:0 and cpu" + _CONV_NODE, "trt_compile", "2.14.1", "", None,
     "near miss: a conv node fails in the repro's own file, whose name holds 'deform_conv2d'"),
    ("deform_conv2d_device", ["FakeTensorDeviceMismatchError", "RuntimeError"],
     _MISMATCH_14 % "cuda:1 and cuda:0" + _DEFORM_NODE, "emulated_trt250_decomposition_cuda1", "2.14.1",
     "",
     "mask_on_default_device_2_13", "recorded, torch 2.14.1 (model on fake cuda:1)"),
    ("deform_conv2d_device", ["RuntimeError"],
     "builtins.RuntimeError: Unhandled FakeTensor Device Propagation for torchvision.deform_conv2d.default, "
     "found two different devices cuda:1, cuda:0" + _DEFORM_NODE, "emulated_trt250_decomposition_cuda1",
     "2.9.1", "", "mask_on_default_device", "recorded, torch 2.9.1 (model on fake cuda:1)"),
    ("deform_conv2d_device", ["RuntimeError"],
     "builtins.RuntimeError: Unhandled FakeTensor Device Propagation for torchvision.deform_conv2d.default, "
     "found two different devices cuda:1, cuda:0" + _DEFORM_NODE, "trt_compile", "2.5.1", "", None,
     "near miss: the cuda:1 mismatch is not the 2.4.0 bug on the main stage"),
    # ---- dynamic_unet_shapes
    ("dynamic_unet_shapes", ["RuntimeError"], "RuntimeError: " + _WILDCARD, "ts_dynamic_compile", "2.2.0",
     "", "ts_reshape_wildcard", "TRT #2617 (reporter's TorchScript log) and #1568"),
    ("dynamic_unet_shapes", ["RuntimeError"], "RuntimeError: [Shuffle]: output shape can not be computed",
     "ts_dynamic_compile", "2.2.0", "", None,
     "near miss: generic TensorRT shuffle text without the wildcard error"),
    ("dynamic_unet_shapes", ["RuntimeError"],
     "RuntimeError: [Error thrown at core/conversion/converters/impl/shuffle.cpp] Expected "
     "nvinfer1::ILayer to be non-null", "ts_dynamic_compile", "2.2.0", _WILDCARD + "\n",
     "ts_reshape_wildcard_logged", "the wildcard error only in the TensorRT log (TRT #2617, #1568)"),
    ("dynamic_unet_shapes", ["RuntimeError"],
     "RuntimeError: [Error thrown at core/conversion/converters/impl/shuffle.cpp] Expected "
     "nvinfer1::ILayer to be non-null", "ts_dynamic_compile", "2.2.0",
     "WARNING: [Torch-TensorRT] - [Shuffle]: output shape can not be computed\n", None,
     "near miss: a log with only generic shuffle text"),
    # ---- onnx_export_device
    ("onnx_export_device", ["RuntimeError"],
     "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cpu and "
     "cuda:0! (when checking argument for argument index in method wrapper_CUDA__index_select)",
     "legacy_export", "2.0.0", "", "legacy_eager_device_mismatch",
     "printed in pytorch #102947 (torch 2.0.0+cu118, legacy exporter): index_select, CPU self first"),
    ("onnx_export_device", ["RuntimeError"],
     "RuntimeError: Expected all tensors to be on the same device, but got index is on cuda:0, different "
     "from other tensors on cpu (when checking argument in method wrapper_CUDA__index_select)",
     "legacy_export", "2.14.1", "", "legacy_eager_index_on_other_device",
     "torch 2.14.1's per-argument check (its libtorch_cpu.so format, filled for index_select)"),
    ("onnx_export_device", ["RuntimeError"],
     "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cuda:0, different "
     "from other tensors on cpu (when checking argument in method wrapper_CUDA_addmm)",
     "legacy_export", "2.14.1", "", None, "near miss: another op's argument, not index_select's index"),
    ("onnx_export_device", ["RuntimeError"],
     "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cpu and "
     "cuda:0! (when checking argument for argument index in method wrapper_CUDA__index_select)",
     "legacy_export", "2.14.1", "", None, "near miss: the seed's wording is not claimed from 2.8, "
     "where torch no longer has it"),
    ("onnx_export_device", ["RuntimeError"],
     "Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cpu! "
     "(when checking argument for argument index in method wrapper_CUDA__index_select)",
     "legacy_export", "2.6.0", "", None,
     "near miss, printed in pytorch #154093 (torch 2.6.0): CUDA self, CPU index, the other order"),
    ("onnx_export_device", ["RuntimeError"],
     "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
     "and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)",
     "legacy_export", "2.6.0", "", None,
     "near miss, printed in pytorch #159133 (DOSSIER section 0): Linear names its CUDA bias first"),
    ("onnx_export_device", ["RuntimeError"],
     "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
     "and cuda:1!", "legacy_export", "2.6.0", "", None, "near miss: two GPUs, not model vs CPU input"),
    ("onnx_export_device", ["FakeTensorDeviceMismatchError", "RuntimeError"],
     _MISMATCH_14 % "cpu and cuda:0",
     "fake_first_op", "2.14.1", "", "first_op_fake_mismatch", "recorded, torch 2.13.0 and 2.14.1"),
    ("onnx_export_device", ["RuntimeError"],
     "builtins.RuntimeError: Unhandled FakeTensor Device Propagation for aten.index_select.default, found "
     "two different devices cpu, cuda:0", "fake_first_op", "2.12.1", "", "first_op_fake_propagation",
     "recorded, torch 2.9.1 and 2.12.1"),
    ("onnx_export_device", ["TorchExportError", "RuntimeError"],
     _STEP1 + "## Exception summary\n\n<class 'RuntimeError'>: Unhandled FakeTensor Device Propagation "
     "for aten.index_select.default, found two different devices cpu, cuda:0\n\n(Refer to the full stack "
     "trace above for more information.)\nbuiltins.RuntimeError: Unhandled FakeTensor Device Propagation "
     "for aten.index_select.default, found two different devices cpu, cuda:0", "fake_dynamo_export",
     "2.12.1", "", "first_op_fake_propagation", "recorded, torch 2.12.1 (dynamo exporter, step 1/3)"),
    ("onnx_export_device", ["RuntimeError"],
     "builtins.RuntimeError: Unhandled FakeTensor Device Propagation for aten.sub.Tensor, found two "
     "different devices cpu, cuda:0", "fake_first_op", "2.12.1", "", None,
     "near miss: the normalization (aten.sub) is not the first op"),
    ("onnx_export_device", ["RuntimeError"],
     "builtins.RuntimeError: Unhandled FakeTensor Device Propagation for aten.index_select.default, found "
     "two different devices cpu, cuda:0", "fake_first_op", "2.14.1", "", None,
     "near miss: the <= 2.12 text is not claimed for 2.14"),
    ("onnx_export_device", ["TorchExportError", "RuntimeError"],
     _STEP1 + "## Exception summary\n\n<class 'RuntimeError'>: Tensor on device cuda:0 is not on the "
     "expected device cpu!\nbuiltins.RuntimeError: Tensor on device cuda:0 is not on the expected "
     "device cpu!",
     "fake_dynamo_export", "2.9.1", "", "export_fake_mismatch",
     "recorded, torch 2.9.1 to 2.14.1, with the earlier (x - mean)-first model and dynamic_axes"),
    ("onnx_export_device", ["TorchExportError", "FakeTensorDeviceMismatchError", "RuntimeError"],
     _STEP1 + "## Exception summary\n\n<class 'torch._subclasses.fake_tensor."
     "FakeTensorDeviceMismatchError'>: Expected all tensors to be on the same device, but found at "
     "least two devices, cpu and cuda:0!\n\n"
     "(Refer to the full stack trace above for more information.)\n" + _MISMATCH_14 % "cpu and cuda:0",
     "fake_dynamo_export", "2.14.1", "", "export_fake_mismatch",
     "recorded, torch 2.14.1 (index_select first)"),
    ("onnx_export_device", ["TorchExportError", "RuntimeError"],
     _STEP1 + "## Exception summary\n\n<class 'RuntimeError'>: Tensor on device cpu is not on the expected "
     "device meta!", "fake_dynamo_export", "2.9.1", "", None,
     "near miss: meta vs cpu (DOSSIER section 0) is not the model/input mix"),
    ("onnx_export_device", ["RuntimeError"],
     "builtins.RuntimeError: Expected all tensors to be on the same device, but got weight is on cuda:0, "
     "different from other tensors on cpu", "fake_export_conv_mixed", "2.14.1", "",
     "fake_conv_device_checked",
     "recorded, torch 2.14.1"),
    ("onnx_export_device", ["RuntimeError"],
     "builtins.RuntimeError: Expected all tensors to be on the same device, but got weight is on cuda:0, "
     "different from other tensors on cpu", "fake_export_conv_mixed", "2.13.0", "", None,
     "near miss: 2.13 does not check fake conv devices, so this text is not claimed there"),
    # ---- onnx_gru_linear_before_reset (the check's own text: the bug raises nothing)
    ("onnx_gru_linear_before_reset", ["CheckFailed", "AssertionError"],
     "_stages.CheckFailed: check_close(ONNX GRU (dynamo=True) vs eager): values differ beyond tolerance "
     "(max abs diff 0.162, rtol 0.0001, atol 1e-05)", "dynamo_export", "2.9.1", "",
     "gru_linear_before_reset_0", "recorded, torch 2.9.1 with onnxscript 0.5.7 and 0.7.0"),
    ("onnx_gru_linear_before_reset", ["CheckFailed", "AssertionError"],
     "_stages.CheckFailed: check_close(ONNX GRU (dynamo=False) vs eager): values differ beyond tolerance "
     "(max abs diff 0.162, rtol 0.0001, atol 1e-05)", "workaround_legacy", "2.9.1", "", None,
     "near miss: the TorchScript exporter's GRU is the workaround, not the bug"),
    # ---- onnx_unbind_size_one (the exporter's ConversionError, caused by the TypeError)
    ("onnx_unbind_size_one", ["ConversionError", "TypeError"],
     "torch.onnx._internal.exporter._errors.ConversionError: Failed to convert the exported program to "
     "an ONNX model. This is step 3/3 of exporting the model to ONNX.\nTypeError: 'SymbolicTensor' "
     "object is not iterable", "dynamo_export", "2.9.1", "",
     "unbind_split_not_iterable", "recorded, torch 2.9.1 with onnxscript 0.5.4 and 0.5.6"),
    ("onnx_unbind_size_one", ["ConversionError", "TypeError"],
     "torch.onnx._internal.exporter._errors.ConversionError: Failed to convert the exported program to "
     "an ONNX model.\nTypeError: 'SymbolicTensor' object is not iterable", "size_three", "2.9.1", "",
     None, "near miss: the size-3 split is the control stage, not the bug's"),
    ("onnx_unbind_size_one", ["ConversionError"],
     "torch.onnx._internal.exporter._errors.ConversionError: Failed to convert the exported program to "
     "an ONNX model. This is step 3/3 of exporting the model to ONNX.", "dynamo_export", "2.9.1", "",
     None, "near miss: a conversion failure for another reason"),
    # ---- onnx_fuse_batchnorm_bias_collision (the check's own text: the bug raises nothing)
    ("onnx_fuse_batchnorm_bias_collision", ["CheckFailed", "AssertionError"],
     "_stages.CheckFailed: check_close(ONNX Conv+BatchNorm (optimize=True) vs eager): values differ beyond "
     "tolerance (max abs diff 2.42, rtol 0.0001, atol 1e-05)", "dynamo_export", "2.9.1", "",
     "fused_bias_name_collision", "recorded, torch 2.9.1 with onnxscript 0.5.6"),
    ("onnx_fuse_batchnorm_bias_collision", ["CheckFailed", "AssertionError"],
     "_stages.CheckFailed: check_close(ONNX Conv+BatchNorm (optimize=False) vs eager): values differ beyond "
     "tolerance (max abs diff 2.42, rtol 0.0001, atol 1e-05)", "workaround_no_optimize", "2.9.1", "", None,
     "near miss: without optimization nothing is fused, so a difference there is another bug"),
    # ---- onnx_ts_rshift_signed (the check's own text: the bug raises nothing)
    ("onnx_ts_rshift_signed", ["CheckFailed", "AssertionError"],
     "protocol.CheckFailed: check_close(legacy ONNX vs eager, signed >>): values differ beyond tolerance "
     "(max abs diff 1, rtol 0, atol 0)", "legacy_export", "2.12.1", "", "legacy_rshift_rounds_toward_zero",
     "recorded, torch 2.12.1 (2.9.1 the same)"),
    ("onnx_ts_rshift_signed", ["CheckFailed", "AssertionError"],
     "protocol.CheckFailed: check_close(legacy ONNX vs eager, signed >>): values differ beyond tolerance "
     "(max abs diff 2, rtol 0, atol 0)", "legacy_export", "2.12.1", "", None,
     "near miss: off by more than the rounding (another wrong lowering, not this one)"),
    ("onnx_ts_rshift_signed", ["CheckFailed", "AssertionError"],
     "protocol.CheckFailed: check_close(legacy ONNX vs eager, signed >>): shape (11,) != (1, 11) "
     "(max abs diff 0, rtol 0, atol 0)", "legacy_export", "2.12.1", "", None,
     "near miss: a shape difference is not the rounding"),
    # ---- export_dynamic_shapes_var_kwargs
    ("export_dynamic_shapes_var_kwargs", ["UserError", "RuntimeError"],
     "torch._dynamo.exc.UserError: When `dynamic_shapes` is specified as a dict, its top-level keys must be "
     "the arg names ['kwargs'] of `inputs`, but here they are ['x', 'y']. Since here `inputs` is a "
     "list/tuple enclosing a single dict, maybe you just forgot to enclose `dynamic_shapes` in a list/tuple?",
     "export_call_style", "2.13.0", "", "var_kwargs_top_level_keys",
     "recorded, torch 2.13.0 (2.9.1 the same)"),
    ("export_dynamic_shapes_var_kwargs", ["UserError", "RuntimeError"],
     "torch._dynamo.exc.UserError: When `dynamic_shapes` is specified as a dict, its top-level keys must be "
     "the arg names ['start', 'end'] of `inputs`, but here they are ['end'].", "export_call_style", "2.13.0",
     "", None, "near miss, printed in pytorch #148564: a missing named argument, no **kwargs"),
    # ---- export_dynamic_shapes_var_kwargs_nested
    ("export_dynamic_shapes_var_kwargs_nested", ["AssertionError", "ValueError"],
     "builtins.AssertionError: Must provide a tree_name when there might be a mismatch\n"
     "builtins.ValueError: Node arity mismatch; expected 3, but got 1.", "export_nested_spec", "2.13.0",
     "", "var_kwargs_tree_name_assertion", "recorded, torch 2.13.0 (2.9.1: the same assertion, #150022)"),
    ("export_dynamic_shapes_var_kwargs_nested", ["AssertionError"],
     "builtins.AssertionError: Must provide a tree_name when there might be a mismatch",
     "export_nested_spec", "2.14.1", "", None, "near miss: not claimed from 2.14, where it is fixed"),
    # ---- onnx_dynamic_axes_names_dropped
    ("onnx_dynamic_axes_names_dropped", ["CheckFailed", "AssertionError"],
     "protocol.CheckFailed: check failed: dim 0 of every input and output is named as in dynamic_axes "
     "found={'x': ['s31', 4], 'mask': ['s31', 2], 'y': ['s31', 2]}", "dynamo_export", "2.9.1", "",
     "dynamic_axes_name_lost", "recorded, torch 2.9.1 + onnxscript 0.7.2"),
    ("onnx_dynamic_axes_names_dropped", ["CheckFailed", "AssertionError"],
     "protocol.CheckFailed: check failed: dim 0 of every input and output is named as in dynamic_axes "
     "found={'x': [2, 4], 'mask': [2, 2], 'y': [2, 2]}", "dynamo_export", "2.9.1", "", None,
     "near miss: a static batch (no dynamic axis at all) is another failure"),
    # ---- onnx_export_fallback_removed
    ("onnx_export_fallback_removed", ["TypeError"],
     "builtins.TypeError: export() got an unexpected keyword argument 'fallback'", "export_with_fallback",
     "2.12.1", "", "fallback_keyword_removed", "recorded, torch 2.12.1"),
    ("onnx_export_fallback_removed", ["TypeError"],
     "builtins.TypeError: export() got an unexpected keyword argument 'fallback'", "export_with_fallback",
     "2.9.1", "", None, "near miss: 2.9 still has the parameter, so this text is not the removal there"),
    ("onnx_export_fallback_removed", ["TypeError"],
     "builtins.TypeError: export() got an unexpected keyword argument 'dynamo'", "export_with_fallback",
     "2.4.1", "", None, "near miss: before 2.5 there is no dynamo= either (another keyword)"),
    # ---- pt2e_quant_removed
    ("pt2e_quant_removed", ["ModuleNotFoundError", "ImportError"], _NO_PT2E, "pt2e_quantize", "2.12.1", "",
     "quantize_pt2e_module_removed", "recorded, torch 2.12.1 (2.13.0 and 2.14.1 the same)"),
    ("pt2e_quant_removed", ["ModuleNotFoundError", "ImportError"], _NO_PT2E, "pt2e_quantize", "2.9.1", "",
     None, "near miss: 2.9 ships the module, so this text is a broken install there, not the removal"),
    ("pt2e_quant_removed", ["ModuleNotFoundError", "ImportError"],
     "builtins.ModuleNotFoundError: No module named 'torchao'", "pt2e_quantize", "2.12.1", "", None,
     "near miss: the replacement (torchao) absent is not torch's removal"),
    # ---- export_capture_pre_autograd_graph_removed
    ("export_capture_pre_autograd_graph_removed", ["ImportError"], _NO_CAPTURE, "capture", "2.9.1", "",
     "capture_pre_autograd_graph_removed", "recorded, torch 2.9.1 (2.8.0, 2.14.1 the same)"),
    ("export_capture_pre_autograd_graph_removed", ["ImportError"], _NO_CAPTURE, "capture", "2.6.0", "",
     None, "near miss: 2.6 ships the function, so this text is a broken install there, not the removal"),
    ("export_capture_pre_autograd_graph_removed", ["ImportError"],
     "builtins.ImportError: cannot import name 'export_for_training' from 'torch.export'", "capture",
     "2.14.1", "", None, "near miss: another name's import (the 2.5 replacement) is not this removal"),
    # ---- export_program_call_removed
    ("export_program_call_removed", ["RuntimeError"], _EP_CALL, "call_exported_program", "2.9.1", "",
     "exported_program_not_callable", "recorded, torch 2.9.1 (2.8.0, 2.14.1 the same)"),
    ("export_program_call_removed", ["RuntimeError"], _EP_CALL, "call_exported_program", "2.2.2", "",
     None, "near miss: torch 2.2 calls the program, so the text is not the change there"),
    ("export_program_call_removed", ["RuntimeError"], _EP_CALL, "workaround_module", "2.9.1", "",
     None, "near miss: the text from another stage (ep.module() never raises it)"),
    # ---- onnx_export_dynamo_default
    ("onnx_export_dynamo_default", ["CheckFailed", "AssertionError"], _DYNAMO_DEFAULT, "default_export",
     "2.9.1", "", "default_export_took_dynamo", "recorded, torch 2.9.1 (2.9.0, 2.14.1 the same)"),
    ("onnx_export_dynamo_default", ["CheckFailed", "AssertionError"], _DYNAMO_DEFAULT, "default_export",
     "2.8.0", "", None, "near miss: dynamo defaults to False on 2.8, so the text is not the change there"),
    ("onnx_export_dynamo_default", ["CheckFailed", "AssertionError"],
     "_stages.CheckFailed: check failed: a plain torch.onnx.export(model, args, f) ran the TorchScript "
     "exporter (returned None, wrote only f) returned=NoneType, files=['model.onnx', 'extra.bin']",
     "default_export", "2.9.1", "", None, "near miss: the legacy exporter's return with another file"),
    ("onnx_export_dynamo_default", ["ModuleNotFoundError", "ImportError"],
     "builtins.ModuleNotFoundError: No module named 'onnxscript'", "default_export", "2.9.0", "",
     "default_export_needs_onnxscript", "anomalib #3050 (torch 2.9.0, the same text)"),
    ("onnx_export_dynamo_default", ["ModuleNotFoundError", "ImportError"],
     "builtins.ModuleNotFoundError: No module named 'onnx'", "default_export", "2.9.0", "",
     None, "near miss: onnx itself absent is the stack's, not the default's"),
    # ---- export_strict_default_changed
    ("export_strict_default_changed", ["RuntimeError"], _NON_STRICT_NUMPY, "default_export", "2.9.1", "",
     "non_strict_default_numpy", "recorded, torch 2.9.1 (2.14.1 the same)"),
    ("export_strict_default_changed", ["RuntimeError"], _NON_STRICT_NUMPY, "default_export", "2.7.1", "",
     None, "near miss: the default is strict=True on 2.7, so the text is not the change there"),
    ("export_strict_default_changed", ["RuntimeError"], _NON_STRICT_NUMPY, "workaround_strict_true",
     "2.9.1", "", None, "near miss: the text from the strict=True stage is another problem"),
    ("export_strict_default_changed", ["RuntimeError"], "builtins.RuntimeError: Numpy is not available",
     "default_export", "2.9.1", "", None,
     "near miss, recorded on torch 2.2.2: its NumPy bridge refuses NumPy 2.x (not the default)"),
    # ---- onnx_export_unknown_kwargs_refused
    ("onnx_export_unknown_kwargs_refused", ["TypeError"], _STALE_KEYWORD, "export_stale_keyword", "2.9.1", "",
     "stale_keyword_refused", "recorded, torch 2.9.1 (2.14.1 the same)"),
    ("onnx_export_unknown_kwargs_refused", ["TypeError"], _STALE_KEYWORD, "export_stale_keyword", "2.6.0", "",
     None, "near miss: 2.6's export drops unknown keywords (**_), so the text is not the change there"),
    ("onnx_export_unknown_kwargs_refused", ["TypeError"],
     "builtins.TypeError: export() got an unexpected keyword argument 'fallback'", "export_stale_keyword",
     "2.12.1", "", None,
     "near miss: another keyword's refusal (fallback, removed in 2.11) is not this change"),
    # ---- trt_import_root_logger: a frame signature (FRAME_CASES); the text alone is refused
    ("trt_import_root_logger", ["CheckFailed", "AssertionError"], _ROOT_INFO, "import_root_logger_standin",
     "2.2.2", "", None, "near miss: no torch-tensorrt frame"),
    # ---- trt_convert_method_inputs_dropped: a frame signature (FRAME_CASES); the text alone is refused
    ("trt_convert_method_inputs_dropped", ["CheckFailed", "AssertionError"], _NO_INPUTS,
     "convert_method_inputs_standin", "2.5.1", "", None, "near miss: no torch-tensorrt frame"),
    # ---- trt_save_torchscript_refused: a frame signature (FRAME_CASES); the text alone is refused
    ("trt_save_torchscript_refused", ["ValueError"], _TS_FORMAT, "save_torchscript_standin", "2.8.0", "",
     None, "near miss: no torch-tensorrt frame"),
    # ---- the stand-in entries of 2026-11-28: frame signatures (FRAME_CASES); the text alone is refused
    ("trt_unbacked_output_shape", ["TypeError"], _SYMBOLS_TO_INT, "unbacked_output_standin", "2.5.1", "",
     None, "near miss: no torch-tensorrt frame"),
    ("trt_full_like_decomposition", ["CheckFailed", "AssertionError"], _FULL_LIKE_DTYPE, "full_like_standin",
     "2.6.0", "", None, "near miss: no torch-tensorrt frame"),
    ("trt_full_like_decomposition", ["CheckFailed", "AssertionError"],
     "_stages.CheckFailed: check failed: the compiled full_like output has the dtype it was given "
     "given=torch.int64, found=torch.float32", "trt_compile", "2.6.0", "", "full_like_output_dtype",
     "the GPU stage's own check text (stage_trt_compile), the dtype the decomposition gives at 2.6.0"),
    ("trt_full_like_decomposition", ["CheckFailed", "AssertionError"],
     "_stages.CheckFailed: check failed: the compiled full_like output has the dtype it was given "
     "given=torch.int64, found=torch.float32", "full_like_standin", "2.6.0", "", None,
     "near miss: the GPU check's text from the stand-in stage"),
    ("trt_save_retrace_needs_inputs", ["ValueError"], _RETRACE_EMPTY, "save_no_inputs_standin", "2.9.0", "",
     None, "near miss: no torch-tensorrt frame"),
    # ---- tv_masks_to_boxes_empty
    ("tv_masks_to_boxes_empty", ["RuntimeError"], _MIN_NO_DIM, "masks_to_boxes", "2.9.1", "",
     "empty_mask_min_without_dim", "recorded, torchvision 0.24.1 (0.19.1, 0.20.1 the same; torch's text)"),
    ("tv_masks_to_boxes_empty", ["RuntimeError"], _MIN_NO_DIM, "workaround_nonempty_only", "2.9.1", "",
     None, "near miss: the same text from the workaround's stage, which never passes an empty mask"),
    ("tv_masks_to_boxes_empty", ["ValueError"],
     "builtins.ValueError: not enough values to unpack (expected 2, got 1)", "masks_to_boxes", "2.9.1", "",
     None,
     "near miss, recorded on torchvision 0.24.1: one mask without its batch dimension (invalid input)"),
    # ---- torchscript_device_mix
    ("torchscript_device_mix", ["torch.jit.Error", "RuntimeError"],
     _TS + "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
     "cuda:0 and cpu!", "export_run_cuda", "2.4.0", "", "torchscript_device_mismatch",
     "mmseg #3805 (DOSSIER section 4)"),
    ("torchscript_device_mix", ["torch.jit.Error", "RuntimeError"],
     _TS + "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
     "cuda:0 and cuda:1!", "export_run_cuda", "2.4.0", "", None,
     "near miss: two GPUs (pytorch #46580) is not the cpu mix"),
    ("torchscript_device_mix", ["torch.jit.Error", "RuntimeError"],
     _TS + "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
     "cuda:0 and cuda:1!", "frozen_to_other_gpu", "2.4.0", "", "frozen_other_gpu_mismatch",
     "pytorch #46580: trace on cuda:0, run on cuda:1"),
    ("torchscript_device_mix", ["torch.jit.Error", "RuntimeError"],
     _TS + "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be "
     "the same", "export_run_cuda", "2.4.0", "", "torchscript_conv_device_mismatch",
     "the eager conv wording (DOSSIER section 0, libtorch 2.6 and 2.13) inside the interpreter"),
    ("torchscript_device_mix", ["RuntimeError"],
     "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be "
     "the same", "export_run_cuda", "2.4.0", "", None,
     "near miss: the same text in eager, outside TorchScript"),
    ("torchscript_device_mix", ["torch.jit.Error", "RuntimeError"],
     _TS + "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
     "cuda:0 and cpu!", "trace_cpu_inspect", "2.14.1", "", None,
     "near miss: a CPU inspection stage never runs CUDA: not this bug there"),
    ("torchscript_device_mix", ["RuntimeError"],
     "builtins.RuntimeError: The following operation failed in the TorchScript interpreter.\n...\n"
     "RuntimeError: expected scalar type Double but found Float", "frozen_dtype_standin", "2.14.1", "",
     "frozen_constants_do_not_move", "recorded, torch 2.13.0 and 2.14.1"),
    ("torchscript_device_mix", ["RuntimeError"],
     "RuntimeError: expected scalar type Long but found Float", "frozen_dtype_standin", "2.14.1", "", None,
     "near miss: another dtype pair"),
    # ---- ts_device_gpu_id
    ("ts_device_gpu_id", ["AttributeError"],
     "AttributeError: 'torch.device' object has no attribute 'gpu_id'",
     "embed_engine_torch_device", "2.4.0", "", "torch_device_gpu_id", "MONAI #8017 traceback"),
    ("ts_device_gpu_id", ["AttributeError"], "AttributeError: module 'torch_tensorrt' has no attribute "
     "'set_device'", "embed_engine_torch_device", "2.4.0", "", None, "near miss: TRT #3084"),
    # ---- dynamo_global_partitioner_module_children, dynamo_trace_mixed_static_dynamic_inputs:
    # frame signatures only (FRAME_CASES below); without the frame the text alone is refused
    ("dynamo_global_partitioner_module_children", ["AttributeError"], _NO_GRAPH,
     "global_partitioner_standin", "2.4.1", "", None, "near miss: no torch-tensorrt frame"),
    ("dynamo_trace_mixed_static_dynamic_inputs", ["ValueError"], _NODE_ARITY, "trace_mixed_standin",
     "2.4.1", "", None, "near miss: no torch-tensorrt frame"),
    # ---- dynamo_require_full_compilation_ignored, ts_dla_memory_sizes_ignored (stand-in texts below)
    ("dynamo_require_full_compilation_ignored", ["CheckFailed", "AssertionError"], _HYBRID,
     "trt_compile_full", "2.4.1", "", "hybrid_despite_full_compilation",
     "the stand-in stage's recorded text: the GPU stage makes the same check on the module it gets"),
    ("dynamo_require_full_compilation_ignored", ["CheckFailed", "AssertionError"],
     _HYBRID.replace("leaves no", "leaves a"), "trt_compile_full", "2.4.1", "", None,
     "near miss: another check's text"),
    ("ts_dla_memory_sizes_ignored", ["CheckFailed", "AssertionError"], _DLA, "ts_compile_dla_sizes_standin",
     "2.3.1", "", None, "near miss: the check failing with no torch-tensorrt frame (not at the native call)"),
]


def _signatures(repro_id: str) -> list[protocol.Signature]:
    return importlib.import_module(repro_id).SIGNATURES  # repros import torch lazily


def _match(repro, types, text, stage, torch, log):
    for sig in _signatures(repro):
        if sig.matches_text(types, text, stage, {"torch": torch}, log=log):
            return sig.id
    return None


@pytest.mark.parametrize(("repro", "types", "text", "stage", "torch", "log", "expected", "source"), CASES,
                         ids=[f"{c[0]}:{c[6] or 'near-miss'}:{i}" for i, c in enumerate(CASES)])
def test_signature_against_real_text(repro, types, text, stage, torch, log, expected, source):
    assert _match(repro, types, text, stage, torch, log) == expected, source


_DEFORM_240 = ("builtins.RuntimeError: Unhandled FakeTensor Device Propagation for "
               "torchvision.deform_conv2d.default, found two different devices cuda:0, cpu" + _DEFORM_NODE)
_RUN_DECOMPOSITIONS = "torch_tensorrt/dynamo/_compiler.py:185 in compile: exported_program = " \
    "exported_program.run_decompositions("
_GPU_ID = "builtins.AttributeError: 'torch.device' object has no attribute 'gpu_id'"
_TS_DEVICE = "torch_tensorrt/ts/_Device.py:66 in _from: gpu_id=d.gpu_id,"
_CHILDREN_240 = "torch_tensorrt/dynamo/_compiler.py:364 in compile_module: for node in submodule.graph.nodes"
_TRACE_81 = ("torch_tensorrt/dynamo/_tracer.py:81 in trace: exp_program = export(mod, tuple(torch_inputs), "
             "dynamic_shapes=tuple(dynamic_shapes))")
_FAST_PARTITION_CALL = ("torch_tensorrt/dynamo/_compiler.py:317 in compile_module: partitioned_module, "
                        "supported_ops = partitioning.fast_partition(")

# Stand-in stages (TensorRT stood in): the exception and the torch-tensorrt frame it was raised
# in (``raised_in``), as recorded by `repromatrix run --backend venv --standin tensorrt`.
# (repro, exception types, text, stage, torch version, frame, expected signature or None, source)
FRAME_CASES = [
    ("deform_conv2d_device", ["RuntimeError"], _DEFORM_240, "trt_dynamo_compile_standin", "2.4.1",
     _RUN_DECOMPOSITIONS, "standin_fake_device_propagation", "recorded, torch-tensorrt 2.4.0"),
    ("deform_conv2d_device", ["RuntimeError"], _DEFORM_240, "trt_dynamo_compile_standin", "2.4.1",
     "torch_tensorrt/dynamo/_tracer.py:83 in trace: exp_program = export(", None,
     "near miss: the same text from another torch-tensorrt frame (not the decomposition)"),
    ("deform_conv2d_device", ["FakeTensorDeviceMismatchError", "RuntimeError"],
     _MISMATCH_14 % "cuda:0 and cpu" + _DEFORM_NODE, "trt_dynamo_compile_standin", "2.14.1",
     _RUN_DECOMPOSITIONS, "standin_fake_device_mismatch",
     "torch 2.14.1 text (recorded) with 2.4.0's frame: the frame pattern ignores the line"),
    ("ts_device_gpu_id", ["AttributeError"], _GPU_ID, "ts_compile_torch_device_standin", "2.4.1",
     _TS_DEVICE, "standin_torch_device_gpu_id", "recorded, torch-tensorrt 2.4.0 and 2.5.0"),
    ("ts_device_gpu_id", ["AttributeError"], _GPU_ID, "ts_compile_torch_device_standin", "2.4.1",
     "", None, "near miss: the text raised outside torch-tensorrt (no frame)"),
    ("ts_device_gpu_id", ["AttributeError"], _GPU_ID, "ts_compile_torch_device_standin", "2.4.1",
     "torch_tensorrt/_Device.py:135 in _from: return cls(gpu_id=d.index)", None,
     "near miss: the dynamo frontend's Device._from, which accepts torch.device"),
    ("dynamo_global_partitioner_module_children", ["AttributeError"], _NO_GRAPH,
     "global_partitioner_standin", "2.4.1", _CHILDREN_240, "module_child_has_no_graph",
     "recorded, torch-tensorrt 2.4.0 (torch 2.4.1)"),
    ("dynamo_global_partitioner_module_children", ["AttributeError"], _NO_GRAPH,
     "global_partitioner_standin", "2.3.1",
     _CHILDREN_240.replace(":364 ", ":359 "), "module_child_has_no_graph",
     "recorded, torch-tensorrt 2.3.0 (torch 2.3.1)"),
    ("dynamo_global_partitioner_module_children", ["AttributeError"], _NO_GRAPH,
     "global_partitioner_standin", "2.4.1",
     "torch_tensorrt/dynamo/partitioning/common.py:40 in get_graph_converter_support: "
     "for node in submodule.graph.nodes", None, "near miss: the same text from another function"),
    ("dynamo_trace_mixed_static_dynamic_inputs", ["ValueError"], _NODE_ARITY, "trace_mixed_standin",
     "2.4.1", _TRACE_81, "dynamic_shapes_node_arity", "recorded, torch-tensorrt 2.4.0 (torch 2.4.1)"),
    ("dynamo_trace_mixed_static_dynamic_inputs", ["UserError"], _TOO_FEW, "trace_mixed_standin",
     "2.3.1", _TRACE_81, "dynamic_shapes_too_few_items", "recorded, torch-tensorrt 2.3.0 (torch 2.3.1)"),
    ("dynamo_trace_mixed_static_dynamic_inputs", ["UserError"],
     "torch._dynamo.exc.UserError: Expected {'y': {0: <class 'torch_tensorrt.dynamo._tracer.y_0'>}} "
     "to have 2 items", "trace_mixed_standin", "2.2.2",
     "torch_tensorrt/dynamo/_tracer.py:85 in trace: exp_program = export(mod, tuple(torch_inputs), "
     "dynamic_shapes=dynamic_shapes)", "dynamic_shapes_too_few_items",
     "recorded, torch-tensorrt 2.2.0 (torch 2.2.2): its one-key dict for two arguments"),
    ("dynamo_trace_mixed_static_dynamic_inputs", ["AssertionError"],
     "AssertionError: Expected a name for a dynamic input with shape {'min_shape': (1, 5), 'opt_shape': "
     "(4, 5), 'max_shape': (8, 5)} but found none", "trace_mixed_standin", "2.2.2",
     "torch_tensorrt/dynamo/_tracer.py:65 in trace: raise AssertionError(", None,
     "torch-tensorrt 2.2.0 (torch 2.2.2), TensorRT stood in: another problem (an unnamed dynamic "
     "Input), not this bug: the stages name their inputs"),
    ("dynamo_trace_mixed_static_dynamic_inputs", ["ValueError"], _NODE_ARITY, "trace_mixed_standin",
     "2.4.1", "torch_tensorrt/dynamo/_compiler.py:200 in compile: exported_program = "
     "exported_program.run_decompositions(", None, "near miss: the text from outside trace"),
    ("dynamo_trace_mixed_static_dynamic_inputs", ["UserError"], _TOO_FEW, "trace_mixed_standin",
     "2.4.1", _TRACE_81, None, "near miss: torch 2.4 words it as the Node arity ValueError"),
    ("dynamo_require_full_compilation_ignored", ["CheckFailed", "AssertionError"], _HYBRID,
     "full_compilation_standin", "2.4.1", _FAST_PARTITION_CALL, "standin_hybrid_despite_full_compilation",
     "recorded, torch-tensorrt 2.4.0 (2.2.0: line 285, 2.3.0: line 313)"),
    ("dynamo_require_full_compilation_ignored", ["CheckFailed", "AssertionError"], _HYBRID,
     "full_compilation_standin", "2.4.1",
     "torch_tensorrt/dynamo/partitioning/_adjacency_partitioner.py:207 in partition_graph: "
     "raise AssertionError(", None, "near miss: inside the partitioner, not compile_module's call of it"),
    ("ts_dla_memory_sizes_ignored", ["CheckFailed", "AssertionError"], _DLA, "ts_compile_dla_sizes_standin",
     "2.3.1", "torch_tensorrt/ts/_compiler.py:151 in compile: compiled_cpp_mod = _C.compile_graph("
     "module._c, _parse_compile_spec(spec))", "dla_sizes_dropped", "recorded, torch-tensorrt 2.3.0"),
    ("ts_dla_memory_sizes_ignored", ["CheckFailed", "AssertionError"], _DLA, "ts_compile_dla_sizes_standin",
     "2.3.1", "torch_tensorrt/ts/_compile_spec.py:320 in _parse_compile_spec: info = _C.CompileSpec()",
     None, "near miss: a frame in the spec parser, not the native call"),
    ("trt_import_root_logger", ["CheckFailed", "AssertionError"], _ROOT_INFO, "import_root_logger_standin",
     "2.2.2", _BASIC_CONFIG, "root_logger_configured", "recorded, torch-tensorrt 2.2.0 (torch 2.2.2)"),
    ("trt_import_root_logger", ["CheckFailed", "AssertionError"],
     _ROOT_INFO.replace("'INFO'", "'WARNING'"), "import_root_logger_standin", "2.8.0",
     "torch_tensorrt/_enums.py:388 in to: logging.warning(", None,
     "near miss: 2.8.0's root-level logging.warning adds a handler at import, the level unchanged "
     "(recorded while the check still compared handlers)"),
    ("trt_convert_method_inputs_dropped", ["CheckFailed", "AssertionError"], _NO_INPUTS,
     "convert_method_inputs_standin", "2.5.1", _SPEC_270, "ts_inputs_dropped",
     "recorded, torch-tensorrt 2.5.0 (torch 2.5.1)"),
    ("trt_convert_method_inputs_dropped", ["CheckFailed", "AssertionError"], _NO_INPUTS,
     "convert_method_inputs_standin", "2.5.1",
     "torch_tensorrt/ts/_compiler.py:151 in compile: compiled_cpp_mod = _C.compile_graph(module._c, "
     "_parse_compile_spec(spec))", None, "near miss: ts.compile's spec, not convert_method_to_trt_engine's"),
    ("trt_save_torchscript_refused", ["ValueError"], _TS_FORMAT, "save_torchscript_standin", "2.8.0",
     "torch_tensorrt/_compile.py:643 in save: raise ValueError(", "scriptmodule_format_refused",
     "recorded, torch-tensorrt 2.8.0 (torch 2.8.0)"),
    ("trt_save_torchscript_refused", ["ValueError"],
     "builtins.ValueError: Provided model is a torch.jit.ScriptModule but the output_format specified is "
     "exported_program. Please verify the output_format", "save_torchscript_standin", "2.7.1",
     "torch_tensorrt/_compile.py:635 in save: raise ValueError(", None,
     "near miss: v2.7.0's refusal of output_format='exported_program' (a user's wrong format)"),
    ("trt_save_torchscript_refused", ["ValueError"], _TS_FORMAT, "save_torchscript_standin", "2.8.0",
     "torch_tensorrt/dynamo/_exporter.py:40 in export: raise ValueError(", None,
     "near miss: the text from a frame other than save"),
    ("trt_unbacked_output_shape", ["TypeError"], _SYMBOLS_TO_INT, "unbacked_output_standin", "2.5.1",
     _VAR_RANGE_327, "unbacked_symbol_to_int", "recorded, torch-tensorrt 2.5.0 (torch 2.5.1)"),
    ("trt_unbacked_output_shape", ["TypeError"], _SYMBOLS_TO_INT, "unbacked_output_standin", "2.6.0",
     "torch_tensorrt/dynamo/utils.py:382 in unwrap_tensor_shape: "
     "min_max_opt = extract_var_range_info(tensor)",
     None, "near miss: the text placed in another torch-tensorrt function (v2.6.0 utils.py:382, the caller)"),
    ("trt_full_like_decomposition", ["CheckFailed", "AssertionError"], _FULL_LIKE_DTYPE, "full_like_standin",
     "2.6.0", _POST_LOWERING_678, "full_like_dtype_dropped", "recorded, torch-tensorrt 2.6.0 (torch 2.6.0)"),
    ("trt_full_like_decomposition", ["CheckFailed", "AssertionError"], _FULL_LIKE_DTYPE, "full_like_standin",
     "2.6.0", "torch_tensorrt/dynamo/_compiler.py:670 in compile: exported_program = "
     "exported_program.run_decompositions(", None,
     "near miss: compile's run_decompositions call, not its hand-over to post_lowering"),
    ("trt_save_retrace_needs_inputs", ["ValueError"], _RETRACE_EMPTY, "save_no_inputs_standin", "2.10.0",
     "torch_tensorrt/_compile.py:736 in save: raise ValueError(", "save_retrace_needs_inputs",
     "recorded, torch-tensorrt 2.10.0 (torch 2.10.0)"),
    ("trt_save_retrace_needs_inputs", ["ValueError"], _RETRACE_NO_SPECS, "save_no_inputs_standin", "2.14.1",
     "torch_tensorrt/_compile.py:1290 in save: raise ValueError(", "save_retrace_needs_inputs",
     "recorded, torch-tensorrt 2.14.0 (torch 2.14.1; the text from 2.11.0 on, v2.11.0 _compile.py:1014)"),
    ("trt_save_retrace_needs_inputs", ["ValueError"], _GM_INPUTS_EMPTY, "save_no_inputs_standin", "2.5.1",
     "torch_tensorrt/_compile.py:515 in save: raise ValueError(", None,
     "near miss, recorded at torch-tensorrt 2.5.0 (torch 2.5.1): before 2.6.0 save asks for inputs "
     "for any GraphModule, not this change"),
]


@pytest.mark.parametrize(("repro", "types", "text", "stage", "torch", "frame", "expected", "source"),
                         FRAME_CASES,
                         ids=[f"{c[0]}:{c[6] or 'near-miss'}:{i}" for i, c in enumerate(FRAME_CASES)])
def test_frame_signature_against_recorded_text(repro, types, text, stage, torch, frame, expected,
                                               source):
    found = [sig.id for sig in _signatures(repro) if sig.frame
             and sig.matches_text(types, text, stage, {"torch": torch}, frame=frame)]
    assert found == ([expected] if expected else []), source


def test_every_signature_has_a_positive_and_a_near_miss():
    positives = {(c[0], c[6]) for c in CASES + FRAME_CASES if c[6]}
    near_misses = {c[0] for c in CASES if c[6] is None}
    for rid in IDS:
        for sig in _signatures(rid):
            if sig.signal:
                continue  # signal signatures: test_signal_signatures below
            assert (rid, sig.id) in positives, f"{rid}.{sig.id} has no positive case"
        assert rid in near_misses, f"{rid} has no near-miss case"


# (text, refused as the reporter's skip arithmetic?, source): stage reporter_skip_arithmetic's check
SKIP_TEXTS = [
    ("TorchRuntimeError: Failed running call_function <built-in function add>(*(FakeTensor(..., size=(1, 3, "
     "2*((s0//8)), 2*((s1//8)))), FakeTensor(..., size=(1, 3, (s0//4), (s1//4)))), **{}):\nThe size of "
     "tensor a (2*((s1//8))) must match the size of tensor b ((s1//4)) at non-singleton dimension 3)",
     True, "recorded, torch 2.2.2 (the issue's dynamo text, NGC 23.12 has torch 2.2.0a0)"),
    ("RuntimeError: The size of tensor a (2*((s0//8))) must match the size of tensor b ((s0//4)) at "
     "non-singleton dimension 3)", True, "recorded, torch 2.9.1 to 2.14.1 (reporter_skip_arithmetic)"),
    ("RuntimeError: The size of tensor a ((s0//4)) must match the size of tensor b (2*((s0//8))) at "
     "non-singleton dimension 3", True, "issue 10: a skip + up model names the operands the other way"),
    ("ValueError: ... Eq(2*((s1//8)), (s1//4)) is inconsistent!", True, "DOSSIER section 3, torch 2.6.0"),
    ("RuntimeError: The size of tensor a (2*((s0//8))) must match the size of tensor b (2*((s0//8))) "
     "at non-singleton dimension 3", False, "near miss: the same term on both sides"),
    ("RuntimeError: The size of tensor a (74) must match the size of tensor b (75) at non-singleton "
     "dimension 3", False, "near miss: the eager text at 300 is not the symbolic refusal"),
]


@pytest.mark.parametrize("text, refused, source", SKIP_TEXTS)
def test_reporter_skip_arithmetic_texts(text, refused, source):
    import re

    mod = importlib.import_module("dynamic_unet_shapes")
    assert any(re.search(p, text) for p in mod.SKIP_REFUSALS) is refused, source


def test_signal_signatures():
    """DOSSIER section 3: the wildcard error, then 'Caught signal 11' (rc -11)."""
    sigs = _signatures("dynamic_unet_shapes")
    out = _WILDCARD + "\n[Shuffle]: output shape can not be computed\nCaught signal 11 (Segmentation fault"
    found = protocol.match_signal(sigs, "SIGSEGV", out, "ts_dynamic_compile", {"torch": "2.2.0"})
    assert found is not None and found.id == "ts_wildcard_segfault"
    generic = "[Shuffle]: output shape can not be computed\nCaught signal 11 (Segmentation fault"
    assert protocol.match_signal(sigs, "SIGSEGV", generic, "ts_dynamic_compile", {}) is None
    assert protocol.match_signal(sigs, "SIGABRT", out, "ts_dynamic_compile", {}) is None
