// Typed cell bodies: a model definition may give cells a body type (`bodies`, made with
// `body<T>()`), and then `get`, `set`, `body` and `update` of those cells use it. The
// `@ts-expect-error` lines must fail to compile (if the types accepted them, the directive
// itself would fail `tsc -b`); untyped cells and models keep `unknown`. The run-time test
// checks the marker changes nothing on the wire.

import { expect } from 'chai';
import { body, type Model } from '../src/index.js';
import { RATE_SCHEMA } from './support/rateModel.js';
import { startStoreFixture, type StoreFixture } from './support/storeFixture.js';

interface Plan {
  plan: 'free' | 'pro';
  seats: number;
  note?: string;
}

const ACCOUNT_SCHEMA = {
  name: 'account',
  primary: { fields: { org_id: 'integer', login: 'string' }, shardOn: 'org_id' },
  cells: ['billing', 'notes'],
  bodies: { billing: body<Plan>(), base: body<{ email: string }>() },
} as const;

type Account = Model<typeof ACCOUNT_SCHEMA>;

export async function typedChecks(Account: Account): Promise<void> {
  const account = await Account.put({ org_id: 1, login: 'ada', email: 'ada@example.com' });
  const plan: 'free' | 'pro' = account.billing.get('plan');
  const seats: number = account.billing.get('seats');
  const email: string = account.get('email');
  const billing: Readonly<Plan> = account.billing.body;
  account.billing.set('seats', 3).set('plan', 'pro');
  await account.billing.update({ note: 'annual' });
  await account.cell('billing').update({ seats: 4 });
  void [plan, seats, email, billing];

  // @ts-expect-error a misspelt field of a typed body
  account.billing.get('plna');
  // @ts-expect-error a field of the wrong type
  account.billing.set('seats', 'three');
  // @ts-expect-error a value outside the field's type
  await account.billing.update({ plan: 'enterprise' });
  // @ts-expect-error the base body has no `seats`
  account.get('seats');
  // @ts-expect-error get returns the field's type, not any
  const wrong: string = account.billing.get('seats');
  void wrong;

  // An untyped cell of the same model, and a model with no bodies at all, stay unknown.
  const anything: unknown = account.notes.get('whatever');
  account.notes.set('whatever', { any: ['thing'] });
  void anything;
}

export function untypedChecks(Rate: Model<typeof RATE_SCHEMA>): void {
  const rate = Rate.record('u');
  const price: unknown = rate.get('net_price');
  rate.set('any_key', 1).meta.set('other', 'x');
  // @ts-expect-error unknown is not a number: an untyped body promises nothing
  const number: number = rate.get('net_price');
  void [price, number];
}

describe('typed cell bodies', function () {
  this.timeout(20_000);
  let fixture: StoreFixture;
  before(async () => {
    fixture = await startStoreFixture();
  });
  after(async () => {
    await fixture?.close();
  });

  it('read and write like untyped ones: the body type is not sent', async () => {
    const Account = await fixture.store.defineModel(ACCOUNT_SCHEMA);
    expect([...Account.definition.cells]).to.deep.equal(['billing', 'notes']);
    const account = await Account.put({ org_id: 7, login: 'ada', email: 'ada@example.com' });
    await account.billing.load();
    await account.billing.set('plan', 'pro').set('seats', 3).save();
    const again = await Account.find(account.uuid, { cells: ['base', 'billing'] });
    expect(again?.billing.get('plan')).to.equal('pro');
    expect(again?.billing.get('seats')).to.equal(3);
    expect(again?.get('email')).to.equal('ada@example.com');
  });
});
