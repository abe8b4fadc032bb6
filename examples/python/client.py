"""A Python client of shameless.v1.Store, generated from proto/ with protoc's grpc plugin.

It describes the store, defines its own model (python_note), puts a record with a MessagePack
body, reads the base cell back with GetCell and finds the record with Where. It can be run
again: DefineModel is idempotent and Put is an upsert on the primary index. Run it through
run.sh, which generates the stubs first; SHAMELESS_ADDRESS picks the server (127.0.0.1:50051).
"""

import os
import sys
import uuid

import grpc
import msgpack

from shameless.v1 import cell_pb2, model_pb2, store_pb2, store_pb2_grpc

ADDRESS = os.environ.get("SHAMELESS_ADDRESS", "127.0.0.1:50051")
DEADLINE_S = 10


def define_note_model(store):
    model = model_pb2.ModelDefinition(
        name="python_note",
        primary_index=model_pb2.IndexDefinition(
            name="primary",
            shard_on="account",
            fields=[
                model_pb2.FieldDefinition(name="account", type=model_pb2.FIELD_TYPE_INTEGER),
                model_pb2.FieldDefinition(name="title", type=model_pb2.FIELD_TYPE_STRING),
            ],
        ),
        cells=["tags"],
    )
    return store.DefineModel(store_pb2.DefineModelRequest(model=model), timeout=DEADLINE_S)


def main():
    with grpc.insecure_channel(ADDRESS) as channel:
        store = store_pb2_grpc.StoreStub(channel)

        description = store.DescribeStore(store_pb2.DescribeStoreRequest(), timeout=DEADLINE_S)
        print(f"store: {description.shards_count} shards, {len(description.partitions)} partition(s)")

        defined = define_note_model(store)
        print(f"defined {defined.model.name} (changed: {defined.changed})")

        body = {"account": 42, "title": "from python", "words": 2, "ratio": 0.5}
        put = store.Put(
            store_pb2.PutRequest(
                model="python_note",
                values=msgpack.packb(body),
                # Chosen once per logical write; a retry sends the same one.
                request_id=str(uuid.uuid4()),
            ),
            timeout=DEADLINE_S,
        )
        print(f"put {put.uuid} (created: {put.created}, base version {put.base.ref_key})")

        got = store.GetCell(
            store_pb2.GetCellRequest(model="python_note", uuid=put.uuid, cell="base"),
            timeout=DEADLINE_S,
        )
        # Maps inside a body may have integer keys (the gem's {20261201 => 120}).
        stored = msgpack.unpackb(got.cell.body, strict_map_key=False)
        print(f"get_cell -> version {got.cell.ref_key}: {stored}")
        assert stored == body, f"GetCell gave {stored}, expected {body}"

        found = []
        pages = store.Where(
            store_pb2.WhereRequest(
                model="python_note",
                conditions=[
                    store_pb2.Condition(
                        field="account",
                        op=store_pb2.OPERATOR_EQ,
                        values=[cell_pb2.IndexValue(integer=42)],
                    ),
                    store_pb2.Condition(
                        field="title",
                        op=store_pb2.OPERATOR_GE,
                        values=[cell_pb2.IndexValue(string="from")],
                    ),
                ],
                limit=10,
            ),
            timeout=DEADLINE_S,
        )
        for page in pages:
            found.extend(page.records)
        print(f"where account = 42 and title >= 'from' -> {[record.uuid for record in found]}")
        assert [record.uuid for record in found] == [put.uuid], "Where did not find the record"


if __name__ == "__main__":
    try:
        main()
    except grpc.RpcError as error:
        print(f"{error.code().name}: {error.details()}", file=sys.stderr)
        if error.code() == grpc.StatusCode.UNAVAILABLE:
            # The server may be missing, or it answered that it cannot serve the call now.
            print(
                f"if no Shameless server runs at {ADDRESS}: start one with `pnpm start` "
                "(or set SHAMELESS_ADDRESS=host:port)",
                file=sys.stderr,
            )
        sys.exit(1)
