// The note on a small buffer pool: printed for the default 128 MiB, with the statement that
// sizes it, and not for a pool the suite's tables fit in.
import assert from 'node:assert/strict';
import { SIZED_POOL_BYTES, bufferPoolNote } from '../src/measure/bufferPool.js';

describe('the note on the database buffer pool', () => {
  it('names a small pool and the statement that sizes it', () => {
    const note = bufferPoolNote(128 * 1024 * 1024);
    assert.match(note ?? '', /buffer pool is 128 MiB/);
    assert.match(note ?? '', /SET GLOBAL innodb_buffer_pool_size = 2147483648/);
  });

  it('says nothing of a pool of 2 GiB or more', () => {
    assert.equal(bufferPoolNote(SIZED_POOL_BYTES), undefined);
    assert.equal(bufferPoolNote(8 * SIZED_POOL_BYTES), undefined);
  });

  it('names a pool just under 2 GiB', () => {
    assert.match(bufferPoolNote(SIZED_POOL_BYTES - 1) ?? '', /buffer pool is 2048 MiB/);
  });
});
