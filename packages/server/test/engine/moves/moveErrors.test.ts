// What a mover says when a statement fails on a partition: the step, the partition, and, when the
// connection's server went away, that the connection was lost, whichever words the driver or the
// socket gave (the death of a server reaches a connection open until then in several ways).
import { expect } from 'chai';
import { ShardMoveInterruptedError } from '../../../src/engine/moves/moveErrors.js';

/** An error shaped as mysql2 or Node's socket report it. */
const failure = (message: string, code?: string, fatal?: boolean) =>
  Object.assign(new Error(message), code === undefined ? {} : { code }, fatal ? { fatal } : {});

describe('a move interrupted (pure)', () => {
  it('says the connection was lost for a server gone under an open connection, in any of its words', () => {
    for (const lost of [
      failure("Can't add new command when connection is in closed state"),
      failure('This socket has been ended by the other party', 'EPIPE', true),
      failure('read ECONNRESET', 'ECONNRESET', true),
      failure(
        'Connection lost: The server closed the connection.',
        'PROTOCOL_CONNECTION_LOST',
        true,
      ),
    ]) {
      const error = new ShardMoveInterruptedError(1, 0, 'renaming the source tables away', lost);
      expect(error.message, lost.message)
        .to.include('shard 1: renaming the source tables away failed on partition 0')
        .and.include(`the connection was lost: its server went away or closed it (${lost.message})`)
        .and.include('run the same command again to resume');
    }
  });

  it('tells a server that refuses connections, and any other failure, in its own words', () => {
    const refused = new ShardMoveInterruptedError(
      2,
      1,
      'copying content',
      failure('connect ECONNREFUSED 127.0.0.1:3307', 'ECONNREFUSED', true),
    );
    expect(refused.message).to.equal(
      'shard 2: copying content failed on partition 1 (ECONNREFUSED): connect ECONNREFUSED 127.0.0.1:3307; ' +
        'the move keeps its state: run the same command again to resume',
    );
    const denied = new ShardMoveInterruptedError(
      undefined,
      1,
      'creating the tables',
      failure("CREATE command denied to user 'mover'", 'ER_TABLEACCESS_DENIED_ERROR'),
    );
    expect(denied.message).to.equal(
      "creating the tables failed on partition 1 (ER_TABLEACCESS_DENIED_ERROR): CREATE command denied to user 'mover'; " +
        'the move keeps its state: run the same command again to resume',
    );
  });
});
