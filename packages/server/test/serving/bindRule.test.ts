import { expect } from 'chai';
import { BindRuleError, checkBindRule, isLoopback } from '../../src/serving/bindRule.js';

describe('bind rule (pure)', () => {
  it('knows loopback addresses and Unix sockets from the rest', () => {
    for (const listen of [
      '127.0.0.1:50051',
      '127.1.2.3:0',
      'localhost:50051',
      '[::1]:50051',
      'unix:/tmp/s.sock',
    ]) {
      expect(isLoopback(listen), listen).to.equal(true);
    }
    for (const listen of [
      '0.0.0.0:50051',
      '[::]:50051',
      ':50051',
      '10.0.0.5:50051',
      'db.example:1',
      '127.0.0.1.evil.example:1',
    ]) {
      expect(isLoopback(listen), listen).to.equal(false);
    }
  });

  it('refuses an unprotected non-loopback address unless insecure, and warns when unprotected', () => {
    const rule = (
      listen: string,
      more: { tls?: boolean; tokens?: boolean; insecure?: boolean } = {},
    ) => checkBindRule({ listen, tls: false, tokens: false, insecure: false, ...more });
    expect(() => rule('0.0.0.0:50051')).to.throw(BindRuleError, /--insecure/);
    expect(rule('0.0.0.0:50051', { insecure: true })).to.match(/serving without TLS or tokens/);
    expect(rule('127.0.0.1:50051')).to.match(/serving without TLS or tokens/);
    expect(rule('0.0.0.0:50051', { tls: true })).to.equal(undefined);
    expect(rule('0.0.0.0:50051', { tokens: true })).to.equal(undefined);
  });
});
