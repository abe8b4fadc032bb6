// Partition URLs (pure): what parseMysqlUrl takes, and that no message built from a URL, valid
// or not, shows its password.
import { expect } from 'chai';
import { parseMysqlUrl, redactUrl } from '../src/engine/mysqlPool.js';

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
