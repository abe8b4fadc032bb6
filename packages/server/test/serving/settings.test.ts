import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readConfigFile, resolveSettings, storeShapeOf } from '../../src/serving/settings.js';

describe('settings (pure)', () => {
  it('defaults serve a developer on one machine', () => {
    const settings = resolveSettings({}, {}, {});
    expect(settings.partitions).to.deep.equal(['mysql://root@127.0.0.1:3306/shameless']);
    expect(settings.listen).to.equal('127.0.0.1:50051');
    expect(settings.namespace).to.equal('');
  });

  it('takes a flag over the environment over the config file', () => {
    const file = { shardsCount: 8, namespace: 'fromfile', listen: 'file:1' };
    const env = {
      SHAMELESS_SHARDS_COUNT: '32',
      SHAMELESS_NAMESPACE: 'fromenv',
      SHAMELESS_PARTITIONS: 'mysql://a/x, mysql://b/y',
    };
    const settings = resolveSettings({ shardsCount: '64' }, env, file);
    expect(settings.shardsCount).to.equal(64);
    expect(settings.namespace).to.equal('fromenv');
    expect(settings.listen).to.equal('file:1');
    expect(settings.partitions).to.deep.equal(['mysql://a/x', 'mysql://b/y']);
  });

  it('says which source holds a bad value', () => {
    expect(() => resolveSettings({ shardsCount: 'many' }, {}, {})).to.throw(
      /^--shards-count: expected an integer/,
    );
    expect(() => resolveSettings({}, { SHAMELESS_POOL_SIZE: '0' }, {})).to.throw(
      /^SHAMELESS_POOL_SIZE:/,
    );
    expect(() => resolveSettings({}, {}, { graceMs: -1 })).to.throw(/^config key graceMs:/);
  });

  it('takes --listen as host:port (or a Unix socket) and --log-level as a pino level, refusing others', () => {
    for (const listen of [
      '127.0.0.1:0',
      'localhost:65535',
      '[::1]:50051',
      'dns:host:1',
      'unix:/s',
    ]) {
      expect(resolveSettings({ listen }, {}, {}).listen).to.equal(listen);
    }
    for (const listen of [
      'nonsense',
      '127.0.0.1:99999',
      '127.0.0.1:',
      ':50051',
      'a b:1',
      '::1:1',
    ]) {
      expect(() => resolveSettings({ listen }, {}, {}), listen).to.throw(
        /^--listen: expected host:port with a port from 0 to 65535/,
      );
    }
    expect(resolveSettings({}, { SHAMELESS_METRICS_LISTEN: '' }, {}).metricsListen).to.equal('');
    expect(() => resolveSettings({ metricsListen: 'unix:/s' }, {}, {})).to.throw(
      /^--metrics-listen: expected host:port/,
    );
    expect(resolveSettings({ logLevel: 'trace' }, {}, {}).logLevel).to.equal('trace');
    expect(() => resolveSettings({}, { SHAMELESS_LOG_LEVEL: 'verbose' }, {})).to.throw(
      /^SHAMELESS_LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent, got "verbose"/,
    );
  });

  it('gives serve and plan one store shape: partitions, shards, namespace, created_at kind', () => {
    const settings = resolveSettings(
      { partitions: ['mysql://root@db:3306/a', 'mysql://root@db:3306/b'], shardsCount: 8 },
      { SHAMELESS_NAMESPACE: 'ns', SHAMELESS_LEGACY_CREATED_AT_IS_BIGINT: 'true' },
      {},
    );
    expect(storeShapeOf(settings)).to.deep.equal({
      namespace: 'ns',
      shardsCount: 8,
      partitionUrls: ['mysql://root@db:3306/a', 'mysql://root@db:3306/b'],
      createdAt: 'bigint',
    });
    expect(storeShapeOf(resolveSettings({}, {}, {})).createdAt).to.equal('datetime');
  });

  it('reads legacyCreatedAtIsBigint as a boolean from a flag, the environment or the file', () => {
    const legacy = (...sources: Parameters<typeof resolveSettings>) =>
      resolveSettings(...sources).legacyCreatedAtIsBigint;
    expect(legacy({}, {}, {})).to.equal(false);
    expect(legacy({ legacyCreatedAtIsBigint: true }, {}, {})).to.equal(true);
    expect(legacy({}, { SHAMELESS_LEGACY_CREATED_AT_IS_BIGINT: '1' }, {})).to.equal(true);
    expect(legacy({}, {}, { legacyCreatedAtIsBigint: true })).to.equal(true);
    expect(
      legacy(
        {},
        { SHAMELESS_LEGACY_CREATED_AT_IS_BIGINT: 'false' },
        { legacyCreatedAtIsBigint: true },
      ),
    ).to.equal(false);
    expect(() => legacy({}, { SHAMELESS_LEGACY_CREATED_AT_IS_BIGINT: 'maybe' }, {})).to.throw(
      /^SHAMELESS_LEGACY_CREATED_AT_IS_BIGINT: expected true or false, got "maybe"/,
    );
  });

  it('reads a JSON config file and refuses unknown keys', () => {
    const path = join(tmpdir(), `shameless-config-${process.pid}.json`);
    writeFileSync(path, JSON.stringify({ shardsCount: 8, partitions: ['mysql://h/db'] }));
    expect(resolveSettings({}, {}, readConfigFile(path)).partitions).to.deep.equal([
      'mysql://h/db',
    ]);
    writeFileSync(path, JSON.stringify({ shards: 8 }));
    expect(() => readConfigFile(path)).to.throw(/unknown setting "shards"/);
  });
});
