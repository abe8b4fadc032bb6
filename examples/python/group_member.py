"""A member of a consumer group in Python, on the Consume stream generated from proto/.

It defines its own model (python_event), joins the group python-audit as member python-member-1,
writes a few events, and handles the cells it is delivered: each Deliveries message is
answered with one Acknowledge (a batch per shard and epoch), a handler failure with
FailedDelivery (redelivered, then parked), a revoked shard is released, and a heartbeat goes out
whenever nothing else was sent for the interval the server asked for. Once every event it wrote
is handled (acknowledged, or parked), it leaves (LeaveGroup, then waits for GroupLeft) and checks
with DescribeConsumerGroup that no shard lags. It can be run again: a group goes on from its
cursors, the first run starts it at the latest cells (START_FROM_LATEST), and a run counts only
the events it wrote itself. Run it through run.sh; SHAMELESS_ADDRESS picks the server
(127.0.0.1:50051). `shameless group describe python_event python-audit` shows the group.
"""

import os
import queue
import sys
import uuid

import grpc
import msgpack

from shameless.v1 import groups_pb2, model_pb2, store_pb2, store_pb2_grpc

ADDRESS = os.environ.get("SHAMELESS_ADDRESS", "127.0.0.1:50051")
MODEL, GROUP, MEMBER_ID = "python_event", "python-audit", "python-member-1"
EVENTS = 20
DEADLINE_S = 10
# The whole membership, join to GroupLeft: past it the stream ends DEADLINE_EXCEEDED.
MEMBERSHIP_S = 60


def define_event_model(store):
    model = model_pb2.ModelDefinition(
        name=MODEL,
        primary_index=model_pb2.IndexDefinition(
            name="primary",
            shard_on="account",
            fields=[
                model_pb2.FieldDefinition(name="account", type=model_pb2.FIELD_TYPE_INTEGER),
                model_pb2.FieldDefinition(name="event_id", type=model_pb2.FIELD_TYPE_STRING),
            ],
        ),
    )
    store.DefineModel(store_pb2.DefineModelRequest(model=model), timeout=DEADLINE_S)


class Outbox:
    """What the member sends, in order: the request iterator of its Consume stream.

    gRPC reads it on its own thread; a MemberHeartbeat goes out whenever nothing else was sent
    for the heartbeat interval (GroupJoined says how long).
    """

    def __init__(self):
        self.queue = queue.Queue()
        self.heartbeat_s = 1.0

    def send(self, **message):
        self.queue.put(groups_pb2.ConsumeRequest(**message))

    def close(self):
        self.queue.put(None)

    def requests(self):
        while True:
            try:
                request = self.queue.get(timeout=self.heartbeat_s)
            except queue.Empty:
                request = groups_pb2.ConsumeRequest(heartbeat=groups_pb2.MemberHeartbeat())
            if request is None:
                return
            yield request


def handle(cell):
    """The application's work on one cell; raising reports a FailedDelivery."""
    # Maps inside a body may have integer keys (the gem's {20261201 => 120}).
    return msgpack.unpackb(cell.body, strict_map_key=False)


def handle_deliveries(deliveries, outbox):
    """Handles one Deliveries message and answers it: a FailedDelivery for each cell whose
    handling failed (redelivered after a backoff, parked after max_deliveries), then one
    Acknowledge for the others, batched per shard and epoch. Returns the (shard, id) handled."""
    handled = {}
    for delivery in deliveries:
        cell = delivery.cell
        try:
            handle(cell)
        except Exception as error:
            outbox.send(
                failed=groups_pb2.FailedDelivery(
                    shard=cell.shard, epoch=delivery.epoch, id=cell.id, error=str(error)
                )
            )
            continue
        handled.setdefault((cell.shard, delivery.epoch), []).append(cell.id)
    if handled:
        outbox.send(
            ack=groups_pb2.Acknowledge(
                shards=[
                    groups_pb2.ShardAcknowledgement(shard=shard, epoch=epoch, ids=ids)
                    for (shard, epoch), ids in handled.items()
                ]
            )
        )
    return [(shard, cell_id) for (shard, _), ids in handled.items() for cell_id in ids]


def main():
    run = uuid.uuid4().hex[:8]
    with grpc.insecure_channel(ADDRESS) as channel:
        store = store_pb2_grpc.StoreStub(channel)
        define_event_model(store)

        outbox = Outbox()
        outbox.send(
            join=groups_pb2.JoinGroup(
                model=MODEL,
                group=GROUP,
                member_id=MEMBER_ID,
                # For the first run, which creates the group; later ones go on from its cursors.
                **{"from": groups_pb2.START_FROM_LATEST},
            )
        )
        responses = store.Consume(outbox.requests(), timeout=MEMBERSHIP_S)
        joined = next(responses).joined
        outbox.heartbeat_s = joined.heartbeat_interval_ms / 1000
        print(f"joined {GROUP} of {MODEL} as {joined.member_id} "
              f"(heartbeat every {joined.heartbeat_interval_ms} ms)")

        # Written after joining: a group that starts at the latest cells delivers these.
        written = set()
        for i in range(EVENTS):
            body = {"account": i % 4, "event_id": f"{run}-{i}", "amount": i * 10}
            put = store.Put(
                store_pb2.PutRequest(
                    model=MODEL, values=msgpack.packb(body), request_id=str(uuid.uuid4())
                ),
                timeout=DEADLINE_S,
            )
            written.add((put.base.shard, put.base.id))
        print(f"wrote {len(written)} events (run {run})")

        seen, shards, leaving = set(), set(), False
        for response in responses:
            kind = response.WhichOneof("message")
            if kind == "assigned":
                shards.add(response.assigned.shard)
            elif kind == "deliveries" and not leaving:
                for key in handle_deliveries(response.deliveries.deliveries, outbox):
                    if key in written:  # cells of earlier runs are handled, not counted
                        seen.add(key)
            elif kind == "revoked":
                # Nothing of it is in hand (each message is acknowledged as a whole): release it.
                shards.discard(response.revoked.shard)
                outbox.send(
                    released=groups_pb2.ShardReleased(
                        shard=response.revoked.shard, epoch=response.revoked.epoch
                    )
                )
            elif kind == "lost":
                shards.discard(response.lost.shard)
            elif kind == "parked":
                # Failed max_deliveries times: handled all the same, its shard goes on.
                parked = response.parked
                print(f"parked cell {parked.id} of shard {parked.shard}: {parked.error}")
                if (parked.shard, parked.id) in written:
                    seen.add((parked.shard, parked.id))
            elif kind == "left":
                break
            if seen == written and not leaving:
                # Everything started is acknowledged: leave, and wait for GroupLeft.
                leaving = True
                outbox.send(leave=groups_pb2.LeaveGroup())
        outbox.close()
        assert seen == written, f"handled {len(seen)} of the {len(written)} events written"
        print(f"handled the {len(seen)} events of this run over {len(shards)} shards, then left")

        group = store.DescribeConsumerGroup(
            groups_pb2.DescribeConsumerGroupRequest(model=MODEL, group=GROUP), timeout=DEADLINE_S
        )
        lagging = [shard.shard for shard in group.shards if shard.lag > 0]
        print(f"describe: {len(group.members)} members, {len(group.shards)} shards, "
              f"lagging: {lagging or 'none'}")
        assert not lagging, f"shards {lagging} lag after leaving"


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
