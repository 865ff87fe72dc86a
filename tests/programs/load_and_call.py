"""A user's own IREE program, as gputop finds it: loads a module and its parameters, makes a context, calls.

Not gputop code: it imports only iree.runtime, numpy and the standard library,
and times itself, printing one JSON line at the end:
{"calls": N, "function": "mlp.main", "p50_ms": .., "context_s": .., "params_bytes": .., ...}.

Usage: python load_and_call.py MODEL.vmfb PARAMS.irpa N [--style attr|from] [--device local-task]
- attr (default): `import iree.runtime as rt`; VmModule.mmap, ParameterIndex.load (the file
  through a file handle), VmContext, and VmContext.invoke on variant lists;
- from: `from iree.runtime import ...` names; Config, load_vm_modules (a SystemContext)
  and the FunctionInvoker it hands out.

The other test programs import their loading and timing from here, as a user's
scripts share a module of their own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import iree.runtime as rt
import numpy as np
from iree.runtime import (
    Config,
    ParameterIndex,
    VmModule,
    create_io_parameters_module,
    get_device,
    load_vm_modules,
)

__all__ = ["Loaded", "call_many", "device_argument", "load", "model_input", "parse", "report"]

SCOPE = "model"


def model_input() -> np.ndarray:
    return (np.arange(32 * 512, dtype=np.float32).reshape(32, 512) % 7) - 3


class Loaded:
    """What a program holds after loading: a way to call `main` once, and what loading took."""

    def __init__(self, call: Any, function: str, context_s: float, params_bytes: int, result: Any) -> None:
        self.call = call
        self.function = function
        self.context_s = context_s
        self.params_bytes = params_bytes
        self.result = result  # reads the last call's output back to the host


def load(vmfb: str, irpa: str, style: str = "attr", device_uri: str = "local-task") -> Loaded:
    if style == "from":
        return _load_from(vmfb, irpa, device_uri)
    instance = rt.VmInstance()
    device = rt.get_device(device_uri)
    hal = rt.create_hal_module(instance, device)
    index = rt.ParameterIndex()
    index.load(irpa)
    params = rt.create_io_parameters_module(instance, index.create_provider(scope=SCOPE))
    module = rt.VmModule.mmap(instance, vmfb)
    return _with_context(instance, device, [hal, params, module], module, _index_bytes(index))


def _with_context(instance: Any, device: Any, modules: list[Any], module: Any, params_bytes: int) -> Loaded:
    """A VmContext over `modules`, called the low-level way: variant lists in, variant lists out."""
    started = time.perf_counter()
    context = rt.VmContext(instance, modules=modules)
    context_s = time.perf_counter() - started
    function = module.lookup_function("main")
    argument = device_argument(device)
    last: list[Any] = [None]

    def call() -> Any:
        inputs = rt.VmVariantList(1)
        inputs.push_ref(argument)
        outputs = rt.VmVariantList(1)
        context.invoke(function, inputs, outputs)
        last[0] = outputs
        return outputs

    def result() -> np.ndarray:
        view = last[0].get_as_object(0, rt.HalBufferView)
        return np.asarray(rt.DeviceArray(device, view, implicit_host_transfer=True).to_host())

    return Loaded(call, f"{module.name}.main", context_s, params_bytes, result)


def device_argument(device: Any) -> Any:
    """The model's input as a device buffer, made once (the low-level way: no numpy per call)."""
    return device.allocator.allocate_buffer_copy(
        memory_type=rt.MemoryType.DEVICE_LOCAL,
        allowed_usage=rt.BufferUsage.DEFAULT,
        device=device,
        buffer=model_input(),
        element_type=rt.HalElementType.FLOAT_32,
    )


def _load_from(vmfb: str, irpa: str, device_uri: str) -> Loaded:
    config = Config(device=get_device(device_uri))
    index = ParameterIndex()
    index.load(irpa)
    params = create_io_parameters_module(config.vm_instance, index.create_provider(scope=SCOPE))
    module = VmModule.mmap(config.vm_instance, vmfb)
    started = time.perf_counter()
    bound = load_vm_modules(params, module, config=config)
    context_s = time.perf_counter() - started
    main = bound[-1].main
    x = model_input()
    last: list[Any] = [None]

    def call() -> Any:
        last[0] = main(x)
        return last[0]

    return Loaded(call, f"{module.name}.main", context_s, _index_bytes(index), lambda: np.asarray(last[0]))


def _index_bytes(index: Any) -> int:
    return sum(entry.length for _, entry in index.items())


def call_many(loaded: Loaded, n: int, keep: list[Any] | None = None, sleep_s: float = 0.0) -> list[float]:
    """Call `n` times, timing each call with perf_counter around it; `keep` collects every result."""
    times = []
    for _ in range(n):
        started = time.perf_counter()
        result = loaded.call()
        times.append(time.perf_counter() - started)
        if keep is not None:
            keep.append(result)
        if sleep_s:
            time.sleep(sleep_s)
    return times


def report(loaded: Loaded, times: list[float], **extra: Any) -> dict[str, Any]:
    out = loaded.result() if times else None
    return {
        "calls": len(times),
        "function": loaded.function,
        "p50_ms": statistics.median(times) * 1e3 if times else None,
        "p95_ms": sorted(times)[min(len(times) - 1, int(len(times) * 0.95))] * 1e3 if times else None,
        "context_s": loaded.context_s,
        "params_bytes": loaded.params_bytes,
        "checksum": float(out.sum()) if out is not None else None,
        "pid": os.getpid(),
        **extra,
    }


def parse(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("vmfb")
    parser.add_argument("irpa")
    parser.add_argument("n", type=int)
    parser.add_argument("--style", choices=("attr", "from"), default="attr")
    parser.add_argument("--device", default="local-task")
    return parser.parse_args()


def main() -> None:
    args = parse(__doc__.splitlines()[0])
    loaded = load(args.vmfb, args.irpa, args.style, args.device)
    times = call_many(loaded, args.n)
    print(json.dumps(report(loaded, times, style=args.style)), flush=True)


if __name__ == "__main__":
    main()
