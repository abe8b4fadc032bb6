// Entry of the gem-shaped service's child process (gemService.ts): serves, prints its port, runs
// until killed. Arguments: the partition's URL (database included), the shards count and the
// mysql2 connections at most.
import { serveGemService } from './gemService.js';

const [partitionUrl, shardsCount, connections] = process.argv.slice(2);
if (!partitionUrl || !shardsCount || !connections) {
  console.error('usage: gemServiceMain.js <partition-url> <shards-count> <connections>');
  process.exit(2);
}
const { port } = await serveGemService({
  partitionUrl,
  shardsCount: Number(shardsCount),
  connections: Number(connections),
});
console.log(`gem-shaped service listening on 127.0.0.1:${port}`);
