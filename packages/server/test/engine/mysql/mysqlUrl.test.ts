// Partition URLs (pure): what parseMysqlUrl takes, and that no message built from a URL, valid
// or not, shows its password.
import { expect } from 'chai';
import { parseMysqlUrl, redactUrl } from '../../../src/engine/mysql/mysqlPool.js';

describe('partition URLs (pure)', function () {
  it('reads user, password, host, port, database and socket, decoding escapes', () => {
    expect(
      parseMysqlUrl('mysql://app:p%40ss%2Fw@db.local:3307/store?socket=/run/m.sock'),
    ).to.deep.equal({
      host: 'db.local',
      port: 3307,
      user: 'app',
      password: 'p@ss/w',
      database: 'store',
      socketPath: '/run/m.sock',
    });
    expect(parseMysqlUrl('mysql://127.0.0.1/store')).to.include({ user: 'root', port: 3306 });
  });

  it('reads TLS from ssl-mode, ssl-ca, ssl-cert and ssl-key, as MySQL clients name them', () => {
    const tlsOf = (query: string) => parseMysqlUrl(`mysql://app@db.local/store?${query}`).tls;
    expect(tlsOf('ssl-ca=/etc/ca.pem')).to.deep.equal({
      mode: 'verify-identity',
      caFile: '/etc/ca.pem',
    });
    expect(tlsOf('ssl-mode=VERIFY_CA&ssl-ca=/ca.pem&ssl-cert=/c.pem&ssl-key=/k.pem')).to.deep.equal(
      { mode: 'verify-ca', caFile: '/ca.pem', certFile: '/c.pem', keyFile: '/k.pem' },
    );
    expect(tlsOf('ssl-mode=required')).to.deep.equal({ mode: 'required' });
    expect(tlsOf('ssl-mode=verify-identity')).to.deep.equal({ mode: 'verify-identity' });
    expect(tlsOf('ssl-mode=disabled')).to.equal(undefined);
    expect(parseMysqlUrl('mysql://app@db.local/store')).to.not.have.property('tls');
  });

  it('refuses TLS parameters that contradict each other, saying which', () => {
    const refusals: [string, string][] = [
      ['ssl-mode=sometimes', 'ssl-mode=sometimes is not one of disabled, required, verify-ca'],
      ['ssl-mode=disabled&ssl-ca=/ca.pem', 'ssl-mode=disabled takes no ssl-ca'],
      ['ssl-cert=/c.pem', 'ssl-cert and ssl-key go together'],
      ['ssl-mode=required&ssl-ca=/ca.pem', 'ssl-mode=required does not check the certificate'],
      ['ssl=1', 'unknown parameter ssl in'],
    ];
    for (const [query, problem] of refusals) {
      expect(() => parseMysqlUrl(`mysql://app:s3cret@db.local/store?${query}`), query)
        .to.throw(Error)
        .that.satisfies((error: Error) => {
          expect(error.message).to.include(problem).and.include('app:***@');
          expect(error.message).to.not.include('s3cret');
          return true;
        });
    }
  });

  const secrets: [string, string, string][] = [
    [
      'a plain password',
      'mysql://app:s3cret@127.0.0.1:3306/db',
      'mysql://app:***@127.0.0.1:3306/db',
    ],
    [
      'a password with an unescaped /',
      'mysql://app:s3cr/et@127.0.0.1:3306/db',
      'mysql://app:***@127.0.0.1:3306/db',
    ],
    [
      'a password with an unescaped @',
      'mysql://app:top@secret@127.0.0.1:3306/db',
      'mysql://app:***@127.0.0.1:3306/db',
    ],
    [
      'a password with an unescaped ? and :',
      'mysql://app:a?b:c@host/db',
      'mysql://app:***@host/db',
    ],
    ['a URL without its scheme', 'app:s3cret@host/db', 'app:***@host/db'],
  ];
  for (const [what, url, redacted] of secrets) {
    it(`hides ${what}`, () => {
      expect(redactUrl(url)).to.equal(redacted);
    });
  }

  it('leaves a URL without a password as it is', () => {
    for (const url of [
      'mysql://root@127.0.0.1:3306/db',
      'mysql://127.0.0.1/db',
      'mysql://h:3306/db',
    ]) {
      expect(redactUrl(url)).to.equal(url);
    }
  });

  it('never names the password in a refusal, whatever is wrong with the URL', () => {
    for (const url of [
      'mysql://app:s3cr/et@127.0.0.1:3306/db',
      'postgres://app:s3cret@127.0.0.1/db',
      'mysql://app:s3cret@127.0.0.1/bad-name',
      'mysql://app:s3cret@127.0.0.1/db?ssl=1',
    ]) {
      expect(() => parseMysqlUrl(url))
        .to.throw(Error)
        .that.satisfies((error: Error) => {
          expect(error.message).to.not.match(/s3c/);
          expect(error.message).to.include('app:***@');
          return true;
        });
    }
  });
});
