"""Compile a torch-exported CNN for the GPU here, with what names its kernels by its layers (issue 46).

The GPU machine has IREE's runtime but not its compiler or importer. This
exports a ResNet-20 written here in torch (CIFAR's, random weights, eval mode:
the names and the kernels are what matter; 1 MB of weights, where ResNet-18's
45 MB twice would not fit the device's 64 MiB carry beside the wheels) to ONNX
with torch's exporter, whose node names are the module paths users know
(`/layer1/layer1.0/conv1/Conv`), imports it with
gputop's importer and compiles it for CUDA (sm_80) and Vulkan (ampere) with
gputop's own compile. Beside each `resnet18_TARGET.vmfb` go what the compile
cache keeps beside its modules: the executable sources with their ops'
locations (`.sources/`), their work and locations (`.work.json`) and the
module's dispatch sites (`.sites.mlir`); gputop run on a `.vmfb` reads them from
there. One input (`cnn_x.npy`) and the reference (torch's own output for it,
`cnn_ref.npy`) go along.

The export needs torch and torchvision (not among gputop's dependencies), the
rest gputop's environment: two steps,
  /tmp/torchenv/bin/python bench/prepare_layers_bundle.py .device/layers --export-only
  .venv/bin/python bench/prepare_layers_bundle.py .device/layers
Then `bench/gpu/layers.sh` on the GPU.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np

TARGETS = ("cuda", "vulkan")


def export_cnn(folder: Path) -> Path:
    """A ResNet-20 (CIFAR's: 3 stages of 3 basic blocks, 0.27 M weights) as ONNX by torch's exporter, an
    input and torch's own output for it. Its repeated blocks share kernels: what the dispatch sites name."""
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, inputs: int, outputs: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(outputs)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(outputs)
            self.downsample = (
                nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs))
                if stride != 1 or inputs != outputs
                else None
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            identity = self.downsample(x) if self.downsample is not None else x
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    class ResNet20(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(16)
            self.relu = nn.ReLU()
            self.layer1 = nn.Sequential(*(BasicBlock(16, 16, 1) for _ in range(3)))
            self.layer2 = nn.Sequential(BasicBlock(16, 32, 2), BasicBlock(32, 32, 1), BasicBlock(32, 32, 1))
            self.layer3 = nn.Sequential(BasicBlock(32, 64, 2), BasicBlock(64, 64, 1), BasicBlock(64, 64, 1))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(64, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.relu(self.bn1(self.conv1(x)))
            x = self.layer3(self.layer2(self.layer1(x)))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    torch.manual_seed(46)
    model = ResNet20().eval()
    for module in model.modules():  # batch norms that do something (fresh ones are the identity)
        if isinstance(module, nn.BatchNorm2d):
            nn.init.uniform_(module.running_var, 0.5, 1.5)
            nn.init.normal_(module.running_mean, 0.0, 0.1)
    x = torch.rand(1, 3, 32, 32)
    path = folder / "cnn.onnx"
    torch.onnx.export(model, (x,), str(path), input_names=["x"], output_names=["logits"], opset_version=17,
                      dynamo=False)  # fmt: skip
    with torch.no_grad():
        reference = model(x).numpy()
    np.save(folder / "cnn_x.npy", x.numpy())
    np.save(folder / "cnn_ref.npy", reference)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", default=Path(".device/layers"))
    parser.add_argument("--export-only", action="store_true", help="only the ONNX export (the Python with torch)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.export_only:
        print(f"exported {export_cnn(args.out)}")
        return
    from gputop.core.module.compile import SITES_SUFFIX, compile_module
    from gputop.core.module.targets import CUDA_FLAGS, VULKAN_NVIDIA_FLAGS
    from gputop.core.onnx.onnx_import import COMPILE_FLAGS as ONNX_FLAGS
    from gputop.core.onnx.onnx_import import DEBUGINFO_FLAG, import_onnx
    from gputop.core.profiling.work.dispatch_work import sources_dir_for, work_file_for
    from gputop.core.profiling.work.ir_count import module_work

    model = args.out / "cnn.onnx"
    if not model.exists():
        raise SystemExit(f"no {model}: run this first with --export-only, with a Python that has torch")
    imported = import_onnx(model, args.out)
    manifest = {}
    for target in TARGETS:
        flags = CUDA_FLAGS if target == "cuda" else VULKAN_NVIDIA_FLAGS
        compiled = compile_module(imported.mlir, (*flags, *ONNX_FLAGS, DEBUGINFO_FLAG))
        vmfb = args.out / f"cnn_{target}.vmfb"
        shutil.copyfile(compiled.vmfb_path, vmfb)
        work = module_work(compiled.vmfb_path)
        if work.reason:
            raise SystemExit(f"{vmfb.name}: {work.reason}")
        shutil.copyfile(work_file_for(compiled.vmfb_path), work_file_for(vmfb))
        shutil.rmtree(sources_dir_for(vmfb), ignore_errors=True)
        shutil.copytree(sources_dir_for(compiled.vmfb_path), sources_dir_for(vmfb))
        shutil.copyfile(compiled.vmfb_path.with_suffix(SITES_SUFFIX), vmfb.with_suffix(SITES_SUFFIX))
        sites = vmfb.with_suffix(SITES_SUFFIX).read_text().count("flow.dispatch @")
        manifest[vmfb.name] = {"target": target, "flags": list(compiled.flags), "kernels": len(work.dispatches),
                               "dispatch_sites": sites}  # fmt: skip
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {json.dumps(manifest)} to {args.out} ({size / 2**20:.2f} MiB)")


if __name__ == "__main__":
    main()
