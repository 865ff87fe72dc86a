"""A user's program that loads its parameters the slow way: reads every tensor into its own bytes, then add_buffer.

It parses the .irpa itself (IREE's archive layout: a header, entries, names,
then the data) and never lets IREE see the file; IREE gets host memory, one
buffer per tensor. Calls as load_and_call's attr style does.

Usage: python host_memory_params.py MODEL.vmfb PARAMS.irpa N
Prints {"calls": N, ..., "params_bytes": .., "params_s": ..} (params_s: reading and adding).
"""

from __future__ import annotations

import json
import struct
import time

import iree.runtime as rt
from load_and_call import SCOPE, _with_context, call_many, parse, report

__all__: list[str] = []

HEADER = struct.Struct("<IHHQQQQQQQQQQ")  # magic, version, sizes, entry count, entry/metadata/storage segments
ENTRY = struct.Struct("<QIQQQQQQQQ")  # size, type, flags, name, metadata, alignment, storage
MAGIC = 0x41505249  # "IRPA"
DATA = 2


def read_irpa(path: str) -> dict[str, bytes]:
    """Every data entry of the archive, read into bytes of the program's own."""
    tensors: dict[str, bytes] = {}
    with open(path, "rb") as f:
        header = HEADER.unpack(f.read(HEADER.size))
        if header[0] != MAGIC:
            raise ValueError(f"{path}: not an IREE parameter archive")
        count, entries_at, metadata_at, storage_at = header[6], header[7], header[9], header[11]
        at = entries_at
        for _ in range(count):
            f.seek(at)
            size, kind, _, name_at, name_len, _, _, _, data_at, data_len = ENTRY.unpack(f.read(ENTRY.size))
            at += (size + 15) // 16 * 16
            if kind != DATA:
                continue
            f.seek(metadata_at + name_at)
            name = f.read(name_len).decode()
            f.seek(storage_at + data_at)
            tensors[name] = f.read(data_len)
    return tensors


def main() -> None:
    args = parse(__doc__.splitlines()[0])
    instance = rt.VmInstance()
    device = rt.get_device(args.device)
    started = time.perf_counter()
    index = rt.ParameterIndex()
    for name, data in read_irpa(args.irpa).items():
        index.add_buffer(name, data)
    params_s = time.perf_counter() - started
    params = rt.create_io_parameters_module(instance, index.create_provider(scope=SCOPE))
    module = rt.VmModule.mmap(instance, args.vmfb)
    hal = rt.create_hal_module(instance, device)
    params_bytes = sum(entry.length for _, entry in index.items())
    loaded = _with_context(instance, device, [hal, params, module], module, params_bytes)
    times = call_many(loaded, args.n)
    print(json.dumps(report(loaded, times, style="host memory", params_s=params_s)), flush=True)


if __name__ == "__main__":
    main()
