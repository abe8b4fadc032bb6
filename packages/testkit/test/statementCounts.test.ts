import { expect } from 'chai';
import { createConnection } from 'mysql2/promise';
import { readStatementCounts, testMysqlUrl, watchStatements } from '../src/index.js';

describe('statement counters (readStatementCounts, watchStatements)', function () {
  this.timeout(30_000);

  it('count the SELECTs and MASTER_GTID_WAITs a client runs', async () => {
    const url = await testMysqlUrl();
    const first = await readStatementCounts(url);
    const watch = await watchStatements([url]);
    const connection = await createConnection(url);
    try {
      for (let i = 0; i < 5; i += 1) await connection.query('SELECT 1');
      // An empty position is reached at once: 0.
      await connection.query("SELECT MASTER_GTID_WAIT('', 1)");
    } finally {
      await connection.end();
    }
    const [moved] = (await watch.delta()).servers;
    // Other clients of the server may add theirs: at least ours.
    expect(moved!.selects).to.be.at.least(6);
    expect(moved!.gtidWaits).to.be.at.least(1);
    const last = await readStatementCounts(url);
    expect(last.selects - first.selects).to.be.at.least(moved!.selects);
  });
});
