// A client process for security.test.ts: connects to one endpoint with mutual TLS and a token
// from the environment, and prints the store's shard count. The test reads its stderr for
// Node's warnings (which a process prints once), and runs it with a proxy in its environment.

import { readFileSync } from 'node:fs';
import { connect } from '../../src/index.js';

const [endpoint, ca, cert, key] = process.argv.slice(2) as [string, string, string, string];
const store = await connect({
  endpoints: [endpoint],
  tls: { ca: readFileSync(ca), cert: readFileSync(cert), key: readFileSync(key) },
  token: process.env.SHAMELESS_TEST_TOKEN,
  deadlineMs: 5000,
  retry: false,
});
console.log(`connected: ${store.shardsCount} shards`);
await store.close();
