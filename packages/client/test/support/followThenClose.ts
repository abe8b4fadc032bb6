// A client process for close.test.ts: follows a model's log, closes its store once a cell has
// come, and must then exit by itself, with nothing (a stream, a channel, a timer) keeping it
// alive. Prints how the follow loop ended.

import { connect } from '../../src/index.js';
import { RATE_SCHEMA } from './rateModel.js';

const store = await connect({ endpoints: process.argv.slice(2) });
const Rate = await store.defineModel(RATE_SCHEMA);
let cells = 0;
let firstCell!: () => void;
const cameIn = new Promise<void>((resolve) => (firstCell = resolve));
const following = (async () => {
  for await (const cell of Rate.each({ follow: true })) {
    void cell;
    cells++;
    firstCell();
  }
})();
await cameIn;
await store.close();
try {
  await following;
  console.log(`the loop ended after ${cells} cell(s)`);
} catch (error) {
  console.log(`the loop threw ${(error as Error).name}: ${(error as Error).message}`);
}
