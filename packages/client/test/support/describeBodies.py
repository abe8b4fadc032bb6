"""Reads cells over gRPC as a Python client would and prints what msgpack made of each body.

For the property tests (test/properties/python.test.ts): stdin is one JSON object
{"address": "127.0.0.1:port", "model": name, "keys": [[uuid, cell], ...]}; the cells are read with
one GetCells call through stubs generated from proto/ (PYTHONPATH names them), and each body is
decoded with msgpack.unpackb as a Python service would (raw=False: str is text, bin is bytes;
strict_map_key=False: a map inside a body may have keys of any type). Prints one JSON line per
key, {"default": ..., "anyExtension": ...}: "default" is what msgpack.unpackb makes of the body
with those options, and "anyExtension" the same with an ext_hook that takes every extension type:
msgpack's own ExtType refuses the types MessagePack reserves (-128 to -2), so a body holding one
is unreadable to a client that passes none. Each is the typed description of messagePackTrees.ts
(`described`), or ["error", class, message] when msgpack refuses the bytes.
"""

import json
import math
import struct
import sys

import grpc
import msgpack

from shameless.v1 import store_pb2, store_pb2_grpc

MOST_BYTES = 64 * 1024 * 1024


class AnyExtension:
    """An extension of any type, reserved ones included (msgpack.ExtType takes 0 to 127)."""

    def __init__(self, code, data):
        self.code = code
        self.data = data


def decoded(body, **options):
    try:
        return describe(msgpack.unpackb(body, raw=False, strict_map_key=False, **options))
    except Exception as error:  # the test names what failed, whatever it is
        return ["error", type(error).__name__, str(error)]


def describe(value):
    # bool before int: True is an int in Python.
    if value is None:
        return ["nil"]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", str(value)]
    if isinstance(value, float):
        return ["float", "NaN" if math.isnan(value) else struct.pack(">d", value).hex()]
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, bytes):
        return ["bin", value.hex()]
    if isinstance(value, msgpack.Timestamp):
        return ["timestamp", str(value.seconds), value.nanoseconds]
    if isinstance(value, (msgpack.ExtType, AnyExtension)):
        return ["ext", value.code, value.data.hex()]
    if isinstance(value, list):
        return ["array", [describe(item) for item in value]]
    if isinstance(value, dict):
        return ["map", [[describe(key), describe(item)] for key, item in value.items()]]
    return ["unexpected", type(value).__name__]


def main():
    request = json.load(sys.stdin)
    options = [("grpc.max_receive_message_length", MOST_BYTES)]
    with grpc.insecure_channel(request["address"], options=options) as channel:
        store = store_pb2_grpc.StoreStub(channel)
        keys = [store_pb2.CellKey(uuid=uuid, cell=cell) for uuid, cell in request["keys"]]
        answer = store.GetCells(
            store_pb2.GetCellsRequest(model=request["model"], keys=keys), timeout=30
        )
    for result in answer.results:
        body = result.cell.body
        line = {"default": decoded(body), "anyExtension": decoded(body, ext_hook=AnyExtension)}
        print(json.dumps(line))


if __name__ == "__main__":
    main()
