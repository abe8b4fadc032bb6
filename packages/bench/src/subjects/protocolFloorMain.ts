// Entry of the protocol floor's child process (protocolFloor.ts): serves, prints its port, runs
// until killed. Arguments: the partition's URL (database included), the shards count, the
// mysql2 connections at most and the time limit of each statement (ms).
import { serveProtocolFloor } from './protocolFloor.js';

const [partitionUrl, shardsCount, connections, readLimitMs] = process.argv.slice(2);
if (!partitionUrl || !shardsCount || !connections || !readLimitMs) {
  console.error(
    'usage: protocolFloorMain.js <partition-url> <shards-count> <connections> <read-limit-ms>',
  );
  process.exit(2);
}
const { port } = await serveProtocolFloor({
  partitionUrl,
  shardsCount: Number(shardsCount),
  connections: Number(connections),
  readLimitMs: Number(readLimitMs),
});
console.log(`protocol floor listening on 127.0.0.1:${port}`);
