// Index values (pure): a string index value holds at most 255 characters, counted as
// characters (code points), not as the UTF-16 units JavaScript counts.
import { expect } from 'chai';
import { InvalidArgumentError } from '../../../src/engine/base/errors.js';
import { toIndexScalar } from '../../../src/engine/model/indexValues.js';
import type { FieldSpec } from '../../../src/engine/model/model.js';

const GATEWAY: FieldSpec = { name: 'gateway', type: 'string' };

describe('index values (pure)', () => {
  it('takes a string of up to 255 characters, however many UTF-16 units they take', () => {
    for (const value of ['', 'x'.repeat(255), 'é'.repeat(255), '😀'.repeat(255)]) {
      expect(toIndexScalar(GATEWAY, value, 'values')).to.equal(value);
    }
  });

  it('refuses a string of 256 characters or more, naming the field', () => {
    for (const value of ['x'.repeat(256), '😀'.repeat(256), `${'😀'.repeat(255)}x`]) {
      expect(() => toIndexScalar(GATEWAY, value, 'values'))
        .to.throw(InvalidArgumentError)
        .with.property('message')
        .that.matches(/gateway must be at most 255 characters/);
    }
  });
});
