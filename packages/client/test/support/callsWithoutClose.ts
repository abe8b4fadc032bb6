// A client process for close.test.ts: makes a few calls and never closes its store. It must
// exit by itself: the Pipeline stream its calls went over ends once it is idle.

import { connect } from '../../src/index.js';
import { RATE_SCHEMA, rateValues } from './rateModel.js';

const store = await connect({ endpoints: process.argv.slice(2) });
const Rate = await store.defineModel(RATE_SCHEMA);
const put = await Rate.put(rateValues(2, 'never closed', '2026-12-01'));
const found = await Rate.find(put.uuid);
const { pipelinedAttempts, attempts } = store.transport.stats();
console.log(
  `found ${found?.get('room_type')}; ${pipelinedAttempts} of ${attempts} attempts pipelined`,
);
