"""A user's program that loads its parameters through host memory, calls, then passes an argument of the wrong shape.

The wrong call fails inside IREE with a ValueError of several lines (the cause on the first, the VM's stack
frames after it: `expected 32 but have 33`), left uncaught: the program exits 1, as a user's does.

Usage: python bad_shape.py MODEL.vmfb PARAMS.irpa N [--sleep-ms 5]
Prints {"calls": N, ...} before the wrong call.
"""

from __future__ import annotations

import json
import sys

import iree.runtime as rt
import numpy as np
from host_memory_params import read_irpa
from load_and_call import SCOPE, Loaded, call_many, model_input, parse, report

__all__: list[str] = []


def main() -> None:
    sleep_ms = 5.0
    if "--sleep-ms" in sys.argv:
        at = sys.argv.index("--sleep-ms")
        sleep_ms = float(sys.argv[at + 1])
        del sys.argv[at : at + 2]
    args = parse(__doc__.splitlines()[0])
    config = rt.Config(device=rt.get_device(args.device))
    index = rt.ParameterIndex()
    for name, data in read_irpa(args.irpa).items():  # host memory, one buffer per tensor
        index.add_buffer(name, data)
    params = rt.create_io_parameters_module(config.vm_instance, index.create_provider(scope=SCOPE))
    module = rt.VmModule.mmap(config.vm_instance, args.vmfb)
    main_function = rt.load_vm_modules(params, module, config=config)[-1].main
    x = model_input()
    last: list[object] = [None]

    def call() -> object:
        last[0] = main_function(x)
        return last[0]

    params_bytes = sum(entry.length for _, entry in index.items())
    loaded = Loaded(call, f"{module.name}.main", 0.0, params_bytes, lambda: np.asarray(last[0]))
    times = call_many(loaded, args.n, sleep_s=sleep_ms / 1e3)
    print(json.dumps(report(loaded, times, style="host memory")), flush=True)
    main_function(np.zeros((x.shape[0] + 1, x.shape[1]), dtype=np.float32))  # one row more than main takes


if __name__ == "__main__":
    main()
