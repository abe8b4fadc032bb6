// A read and the gem-shaped service's are measured in rounds taken in turn (one call at a time, and
// 16 in flight), each figure the median of its rounds and each ratio the median of the rounds' own: checked with windows that
// answer figures set by hand, in a known order.
import assert from 'node:assert/strict';
import {
  type RoundFigures,
  alternateRounds,
  median,
  medianFigures,
  ratiosToService,
} from '../src/workloads/alternatingRounds.js';

describe('rounds in turn', () => {
  it('takes the store, then the service, each round, and keeps the median of each figure', async () => {
    const order: string[] = [];
    const windows = (side: string, figures: RoundFigures[]) => {
      let next = 0;
      return async () => {
        order.push(`${side} ${next + 1}`);
        return figures[next++]!;
      };
    };
    const told: number[] = [];
    const rounds = await alternateRounds(
      3,
      {
        store: windows('store', [
          { p50: 0.9, cpu: { server: 500, client: 300, mariadb: 200 } },
          // A slow moment of the machine: one round's outlier does not move the median.
          { p50: 3.0, cpu: { server: 1500, client: 900, mariadb: 600 } },
          { p50: 0.8, cpu: { server: 450, client: 280, mariadb: 210 } },
        ]),
        service: windows('service', [
          { p50: 0.6, cpu: { server: 300, client: 150, mariadb: 190 } },
          { p50: 2.0, cpu: { server: 900, client: 500, mariadb: 500 } },
          { p50: 0.5, cpu: { server: 280, client: 160, mariadb: 180 } },
        ]),
      },
      (done) => told.push(done),
    );
    assert.deepEqual(order, [
      'store 1',
      'service 1',
      'store 2',
      'service 2',
      'store 3',
      'service 3',
    ]);
    assert.deepEqual(told, [1, 2, 3]);
    assert.deepEqual(rounds, {
      rounds: 3,
      store: { p50: 0.9, cpu: { server: 500, client: 300, mariadb: 210 } },
      service: { p50: 0.6, cpu: { server: 300, client: 160, mariadb: 190 } },
      // p50: 1.5, 1.5, 1.6; CPU: 1000/640, 3000/1900, 940/620.
      overService: { store: { p50: 1.5, cpu: 1000 / 640 } },
    });
  });

  it("takes a side's ratio to the service in each round, and keeps the median of those", () => {
    // The machine's pace changes between windows, so the store's slow windows fall in other
    // rounds than the service's: the medians of each side say 0.67×, where three of the five
    // rounds say 2× or more (2, 0.33, 6, 0.67, 2).
    const store = [0.4, 0.4, 1.2, 0.4, 1.2].map((p50) => ({ p50, cpu: {} }));
    const service = [0.2, 1.2, 0.2, 0.6, 0.6].map((p50) => ({ p50, cpu: {} }));
    assert.equal(medianFigures(store).p50 / medianFigures(service).p50, 0.4 / 0.6);
    assert.deepEqual(ratiosToService(store, service), { p50: 2 });
  });

  it('gives a CPU ratio only where every round read the three processes of both sides', () => {
    const full = { server: 300, client: 100, mariadb: 100 };
    const service = [
      { p50: 0.5, cpu: { server: 100, client: 50, mariadb: 100 } },
      { p50: 0.5, cpu: { server: 200, client: 100, mariadb: 200 } },
    ];
    assert.deepEqual(
      ratiosToService(
        [
          { p50: 1, cpu: full },
          { p50: 0.5, cpu: full },
        ],
        service,
      ),
      { p50: 1.5, cpu: 1.5 },
    );
    const unread = ratiosToService(
      [
        { p50: 1, cpu: full },
        { p50: 0.5, cpu: { server: 300, client: 100 } },
      ],
      service,
    );
    assert.deepEqual(unread, { p50: 1.5 });
  });

  it("gives a throughput ratio, the median of the rounds' own, where every round counted both sides", () => {
    // 16 in flight: the machine's second round is slow for both sides alike.
    const store = [1600, 800, 1500].map((opsPerSecond) => ({ p50: 1, cpu: {}, opsPerSecond }));
    const service = [1000, 500, 1200].map((opsPerSecond) => ({ p50: 1, cpu: {}, opsPerSecond }));
    // Ratios 1.6, 1.6, 1.25: the median 1.6, where the medians' ratio says 1.5 / 1.0.
    assert.deepEqual(ratiosToService(store, service), { p50: 1, opsPerSecond: 1.6 });
    assert.deepEqual(medianFigures(store), { p50: 1, cpu: {}, opsPerSecond: 1500 });
    const uncounted = [{ p50: 1, cpu: {} }, ...store.slice(1)];
    assert.deepEqual(ratiosToService(uncounted, service), { p50: 1 });
    assert.equal('opsPerSecond' in medianFigures(uncounted), false);
  });

  /** A side whose windows answer `p50s` in turn (its server 100 µs a call more each round). */
  const sideOf = (order: string[], name: string, p50s: number[]) => {
    let next = 0;
    return async () => {
      order.push(`${name} ${next + 1}`);
      return { p50: p50s[next++]!, cpu: { server: 100 * next } };
    };
  };

  it('takes the floor third in each round where there is one, and keeps its medians apart', async () => {
    const order: string[] = [];
    const side = (name: string, p50s: number[]) => sideOf(order, name, p50s);
    const rounds = await alternateRounds(2, {
      store: side('store', [0.9, 0.7]),
      service: side('service', [0.5, 0.3]),
      floor: side('floor', [0.6, 0.4]),
    });
    assert.deepEqual(order, ['store 1', 'service 1', 'floor 1', 'store 2', 'service 2', 'floor 2']);
    assert.deepEqual(rounds.floor, { p50: 0.5, cpu: { server: 150 } });
    assert.equal(rounds.service.p50, 0.4);
    const without = await alternateRounds(1, {
      store: side('store', [1]),
      service: side('service', [1]),
    });
    assert.equal('floor' in without, false);
    assert.equal('bareClient' in without, false);
  });

  it("takes the store's server with a bare client last in each round, its medians apart", async () => {
    const order: string[] = [];
    const side = (name: string, p50s: number[]) => sideOf(order, name, p50s);
    const rounds = await alternateRounds(3, {
      store: side('store', [0.9, 0.7, 0.8]),
      service: side('service', [0.5, 0.3, 0.4]),
      floor: side('floor', [0.6, 0.4, 0.5]),
      bareClient: side('bare', [0.65, 0.75, 0.55]),
    });
    assert.deepEqual(order.slice(0, 5), ['store 1', 'service 1', 'floor 1', 'bare 1', 'store 2']);
    assert.equal(order.length, 12);
    assert.deepEqual(rounds.bareClient, { p50: 0.65, cpu: { server: 200 } });
    assert.equal(rounds.store.p50, 0.8);
    const withoutFloor = await alternateRounds(1, {
      store: side('store', [1]),
      service: side('service', [1]),
      bareClient: side('bare', [1]),
    });
    assert.equal('floor' in withoutFloor, false);
    assert.equal(withoutFloor.bareClient?.p50, 1);
  });

  it("leaves out a process's CPU that a round did not read, and takes the middle two's mean", () => {
    assert.deepEqual(
      medianFigures([
        { p50: 1, cpu: { server: 10, client: 5 } },
        { p50: 2, cpu: { server: 30, client: 7, mariadb: 4 } },
        { p50: 4, cpu: { server: 20, client: 6 } },
        { p50: 3, cpu: { server: 40, client: 8 } },
      ]),
      { p50: 2.5, cpu: { server: 25, client: 6.5 } },
    );
    assert.ok(Number.isNaN(median([])));
  });
});
