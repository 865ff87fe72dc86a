"""The ONNX import's child process: prepare the model, convert it to MLIR that keeps node names.

Run as `python -m gputop.core.onnx.onnx_convert MODEL OUT.mlir [options]` by `onnx_import`.
It does what `iree-import-onnx` does (opset upgrade, shape inference, IREE's
importer, optional weight externalization) with three differences users feel:
unnamed nodes get names and the MLIR keeps each node's name as its location,
so a compile error can name the ONNX node; old exports whose initializers are
not graph inputs are repaired before the upgrade instead of failing the ONNX
checker; and any failure ends as one line on stderr, prefixed `gputop-onnx:`,
naming the node when one is to blame, never a traceback. It runs in a child
process because the importer can crash or take minutes, and must be cancellable.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gputop.core.errors import ConvertError
from gputop.core.onnx.onnx_model import OnnxNode, interface, name_nodes, nodes, opset_of, repair_initializers

__all__ = ["ERROR_PREFIX", "convert", "main", "prepare"]

ERROR_PREFIX = "gputop-onnx: "


def prepare(path: Path, opset: int) -> Any:
    """The model, named, repaired, upgraded to `opset` (when older) and shape-inferred."""
    import onnx

    model = onnx.load(str(path))
    name_nodes(model)
    repair_initializers(model)
    current = opset_of(model, "")
    if current < opset:
        try:
            model = onnx.version_converter.convert_version(model, opset)
        except Exception as exc:
            raise ConvertError(f"the ONNX opset upgrade from {current} to {opset} failed: {_one_line(exc)}") from None
    try:
        return onnx.shape_inference.infer_shapes(model, data_prop=True)
    except ValueError:  # over protobuf's 2 GB: go without inferred shapes, as the importer then does
        return model
    except Exception as exc:
        raise ConvertError(f"ONNX shape inference failed: {_one_line(exc)}") from None


def convert(model: Any, output: Path, params: dict[str, Any] | None, data_dir: Path) -> None:
    """Import `model` with IREE's importer and write MLIR with node names as locations."""
    from iree.compiler.extras import onnx_importer
    from iree.compiler.ir import Context

    context = Context()
    info = onnx_importer.ModelInfo(model)
    module = info.create_module(context=context).operation
    importer: Any
    if params is not None:
        from iree.compiler.tools.import_onnx.importer_externalization_overrides import IREENodeImporter, ParamData

        param_data = ParamData(
            param_bit_threshold=None,
            num_elements_threshold=params["threshold"],
            params_scope=params["scope"],
            data_dir=str(data_dir),
            param_path=str(params["path"]),
            input_index_threshold=None,
        )
        importer = IREENodeImporter.define_function(info.main_graph, module, param_data)
    else:
        importer = onnx_importer.NodeImporter.define_function(info.main_graph, module)
    _blame_nodes(importer, model)
    importer.import_all()
    module.verify()
    output.write_text(module.get_asm(enable_debug_info=True, assume_verified=True), encoding="utf-8")
    if params is not None:
        importer.save_params()


def _blame_nodes(importer: Any, model: Any) -> None:
    """Make a failure inside the importer name the node it was importing.

    The importer's classes have `__slots__`, so the class itself is patched: this is a child
    process that imports one model and exits, and subgraph importers (If, Loop) share the class.
    """
    by_name = {node.name: node for node in nodes(model)}
    importer_class = type(importer)
    import_node = importer_class.import_node

    def import_named(self: Any, node: Any) -> None:
        try:
            import_node(self, node)
        except ConvertError:
            raise
        except Exception as exc:
            named = by_name.get(node.name) or OnnxNode(node.name, node.op_type, node.domain, 0)
            raise ConvertError(f"{named}: not supported by IREE 3.13's ONNX import ({_one_line(exc)})") from None

    importer_class.import_node = import_named


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gputop.core.onnx.onnx_convert")
    parser.add_argument("model", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--opset", type=int, required=True)
    parser.add_argument("--interface", type=Path, help="write the imported graph's inputs and outputs here (JSON)")
    parser.add_argument("--params-to", type=Path, help="externalize large initializers into this .irpa")
    parser.add_argument("--params-threshold", type=int, default=1024)
    parser.add_argument("--params-scope", default="model")
    args = parser.parse_args(argv)
    params = None
    if args.params_to is not None:
        params = {"path": args.params_to, "threshold": args.params_threshold, "scope": args.params_scope}
    try:
        model = prepare(args.model, args.opset)
        if args.interface is not None:
            args.interface.write_text(json.dumps(interface(model)), encoding="utf-8")
        convert(model, args.output, params, args.model.parent)
    except ConvertError as exc:
        print(ERROR_PREFIX + str(exc), file=sys.stderr)
        return 1
    except Exception as exc:  # the importer's own failures: one line, the traceback is not for users
        print(ERROR_PREFIX + f"the ONNX importer failed: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
