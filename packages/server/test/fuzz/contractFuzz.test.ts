// The seeded pass of the contract fuzzer (campaign.ts), as CI runs it: a fixed seed, so that it
// sends the same requests every run, and enough of them that every RPC is called many times;
// then writes of deeply nested bodies alone. `pnpm fuzz` runs the same fuzzer for minutes, with
// any seed.
import { expect } from 'chai';
import { RPCS } from './requests.js';
import { formatFigures, runCampaign } from './campaign.js';

const SEED = 56;
const CASES = 700;

describe('Contract fuzzing (a seeded pass; pnpm fuzz runs it for minutes)', function () {
  this.timeout(300_000);

  it(`keeps every invariant over ${CASES} requests of seed ${SEED}`, async () => {
    const result = await runCampaign({ seed: SEED, cases: CASES, auditEvery: 25 });
    if (result.failure) expect.fail(`${result.failure}\n\n${formatFigures(result.figures)}`);
    const { calls, statuses } = result.figures;
    // The pass proves something only if it reached every RPC and both sides of the contract.
    for (const rpc of RPCS) expect(calls.get(rpc) ?? 0, `calls of ${rpc}`).to.be.at.least(3);
    for (const code of ['OK', 'INVALID_ARGUMENT', 'NOT_FOUND']) {
      expect(statuses.get(code) ?? 0, `calls answered ${code}`).to.be.at.least(20);
    }
    expect(result.figures.sweeps).to.be.at.least(CASES / 25);
  });

  // Every way a body enters, with values nested 16 to 200,000 deep: the server may take a body
  // only if the SDK's decoder reads it back (issue 56: one nested past what it reads made a
  // record unreadable to every SDK reader).
  it('stores no body nested deeper than the SDK reads, by any RPC that takes one', async () => {
    const result = await runCampaign({ seed: SEED, cases: 60, deepBodiesOnly: true });
    if (result.failure) expect.fail(`${result.failure}\n\n${formatFigures(result.figures)}`);
    expect(result.figures.calls.get('WriteCell') ?? 0).to.be.at.least(5);
    expect(result.figures.calls.get('Put') ?? 0).to.be.at.least(5);
  });
});
