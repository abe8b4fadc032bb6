// Groups of one server writing the same cell go one after the other (pure).
import { expect } from 'chai';
import { CellsInFlight } from '../../../src/engine/write/cellsInFlight.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('cells in flight (pure)', () => {
  it('lets groups of distinct cells go at once', async () => {
    const cells = new CellsInFlight();
    const leaveA = await cells.enter(['t/a/base', 't/b/base']);
    const leaveB = await cells.enter(['t/c/base']);
    expect(cells.size).to.equal(3);
    leaveA();
    leaveB();
    expect(cells.size).to.equal(0);
  });

  it('holds a group that shares a cell until every earlier one writing it is over', async () => {
    const cells = new CellsInFlight();
    const order: string[] = [];
    const leaveA = await cells.enter(['t/a/base']);
    const leaveB = await cells.enter(['t/b/base']);
    const third = cells.enter(['t/a/base', 't/b/base']).then((leave) => {
      order.push('third');
      return leave;
    });
    await turn();
    expect(order).to.deep.equal([]);
    leaveA();
    order.push('a over');
    await turn();
    expect(order, 'still waits for b').to.deep.equal(['a over']);
    leaveB();
    order.push('b over');
    const leaveThird = await third;
    expect(order).to.deep.equal(['a over', 'b over', 'third']);
    leaveThird();
    expect(cells.size).to.equal(0);
  });

  it('lets waiting groups go in the order they came', async () => {
    const cells = new CellsInFlight();
    const order: number[] = [];
    const leaveFirst = await cells.enter(['t/a/base']);
    const waiting = [1, 2, 3].map((n) =>
      cells.enter(['t/a/base']).then((leave) => {
        order.push(n);
        leave();
      }),
    );
    leaveFirst();
    await Promise.all(waiting);
    expect(order).to.deep.equal([1, 2, 3]);
    expect(cells.size).to.equal(0);
  });
});
