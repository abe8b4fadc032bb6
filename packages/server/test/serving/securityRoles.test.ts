// Role tokens through a real server: every RPC of the generated Store service, called by each
// kind of caller, is let through or refused by role alone; the tokens file is checked entry by
// entry; and no refusal ever echoes a token.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { StoreService } from '@shameless/proto';
import { service as healthService } from 'grpc-health-check';
import { authorization } from '../../src/grpc/middleware/authorization.js';
import { METHOD_ROLES, type Role, roleNeeded } from '../../src/grpc/middleware/methodRoles.js';
import { TokenSet, TokensFileError } from '../../src/grpc/middleware/tokens.js';
import { connectStore, rejection } from '../support/grpcCalls.js';
import { RawPipeline } from '../support/pipelineClient.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
} from '../support/storeFixture.js';
import { type TestToken, newToken, sha256Hex, writeTokensFile } from '../support/tokens.js';

const RANK: Record<Role, number> = { reader: 0, writer: 1, admin: 2 };
const RPCS = Object.values(StoreService)
  .map((definition) => ({ definition, name: definition.path.split('/').pop()! }))
  // Checked call by call: every unary RPC is called over a Pipeline too.
  .filter((rpc) => rpc.name !== 'Pipeline');

describe('security: role tokens', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'shameless-tokens-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  describe('the role table', () => {
    it('gives every RPC of the generated Store service a role, and names no other', () => {
      const names = RPCS.map((rpc) => rpc.name);
      expect(names).to.have.length.greaterThan(10);
      for (const name of names) expect(METHOD_ROLES, name).to.have.property(name);
      expect(Object.keys(METHOD_ROLES)).to.have.members(names);
    });

    it('lets readers read and consume, writers write and replay, and only admins define models and reset groups', () => {
      const withRole = (role: Role) =>
        Object.entries(METHOD_ROLES)
          .filter(([, needed]) => needed === role)
          .map(([name]) => name);
      expect(withRole('reader')).to.have.members([
        'GetCell',
        'GetCells',
        'Previous',
        'Where',
        'WhereMany',
        'FetchLatestCells',
        'Each',
        'FindShard',
        'DescribeStore',
        'Consume',
        'DescribeConsumerGroup',
        'ListParkedCells',
      ]);
      expect(withRole('writer')).to.have.members([
        'Put',
        'PutMany',
        'WriteCell',
        'WriteCells',
        'ReplayParkedCell',
      ]);
      expect(withRole('admin')).to.have.members([
        'DefineModel',
        'ResetConsumerGroup',
        'MoveShards',
      ]);
    });

    it('asks admin for a method it does not know (fails closed)', () => {
      expect(roleNeeded('DropEverything')).to.equal('admin');
      expect(roleNeeded('toString')).to.equal('admin');
    });
  });

  describe('every RPC × every caller, through a real server', () => {
    let store: StoreFixture;
    const reader = newToken('dashboard', 'reader');
    const writer = newToken('ingest', 'writer');
    const admin = newToken('ops', 'admin');
    const unknown = newToken('nobody', 'admin');

    before(async () => {
      const file = join(dir, 'table.json');
      writeTokensFile(file, [reader, writer, admin]);
      store = await startStoreFixture({
        middleware: [authorization(new TokenSet(file))],
        connect: { token: admin.token },
      });
    });
    after(() => store?.close());

    /**
     * Calls the RPC with an empty request (every field at its default) and returns its status:
     * refused by the token layer, or answered by the handler, whatever it made of the request.
     */
    const statusOf = async (
      rpc: (typeof RPCS)[number],
      authorizationValue: string | undefined,
      overPipeline = false,
    ): Promise<{ code: status; details: string }> => {
      const metadata = new Metadata();
      if (authorizationValue !== undefined) metadata.set('authorization', authorizationValue);
      const client = store.api.client;
      const options = { deadline: Date.now() + 15_000 };
      const path = rpc.definition.path;
      const empty = () => Buffer.alloc(0);
      const raw = (bytes: Buffer) => bytes;
      try {
        if (overPipeline) {
          const pipeline = new RawPipeline(
            client,
            authorizationValue === undefined ? {} : { authorization: authorizationValue },
          );
          const method = rpc.name[0]!.toLowerCase() + rpc.name.slice(1);
          const request: unknown = rpc.definition.requestDeserialize(Buffer.alloc(0));
          const answer = await pipeline.call({ $case: method, [method]: request } as never);
          pipeline.stream.cancel();
          return answer.$case === 'error'
            ? { code: answer.error.code, details: answer.error.message }
            : { code: status.OK, details: '' };
        }
        if (rpc.definition.responseStream) {
          const stream = client.makeServerStreamRequest(path, empty, raw, {}, metadata, options);
          for await (const message of stream) void message;
        } else {
          await new Promise((resolve, reject) =>
            client.makeUnaryRequest(path, empty, raw, {}, metadata, options, (error, response) =>
              error ? reject(error) : resolve(response),
            ),
          );
        }
        return { code: status.OK, details: '' };
      } catch (error) {
        const { code, details } = error as ServiceError;
        return { code, details };
      }
    };

    const callers: { caller: string; token?: TestToken; header?: string }[] = [
      { caller: 'no token' },
      { caller: 'an unknown token', token: unknown },
      { caller: 'a malformed header', header: `Basic ${reader.token}` },
      { caller: 'a reader', token: reader },
      { caller: 'a writer', token: writer },
      { caller: 'an admin', token: admin },
    ];
    const AUTH_CODES = [status.UNAUTHENTICATED, status.PERMISSION_DENIED];

    for (const { caller, token, header } of callers) {
      it(`answers ${caller} on every RPC by its role`, async () => {
        const outcomes: string[] = [];
        const expected: string[] = [];
        const calls = [
          ...RPCS.map((rpc) => ({ rpc, overPipeline: false })),
          // Every call a Pipeline carries: the unary RPCs and a Where page (not the streams of
          // Each, Consume and MoveShards).
          ...RPCS.filter(
            (rpc) => rpc.name !== 'Each' && rpc.name !== 'Consume' && rpc.name !== 'MoveShards',
          ).map((rpc) => ({
            rpc,
            overPipeline: true,
          })),
        ];
        for (const { rpc, overPipeline } of calls) {
          const sent = header ?? (token && `Bearer ${token.token}`);
          const { code, details } = await statusOf(rpc, sent, overPipeline);
          const label = overPipeline ? `${rpc.name} over a Pipeline` : rpc.name;
          if (token) expect(details, `${label} details`).not.to.contain(token.token);
          if (header) expect(details, `${label} details`).not.to.contain(reader.token);
          const needed = METHOD_ROLES[rpc.name as keyof typeof METHOD_ROLES];
          const held = token && token !== unknown ? token.role : undefined;
          const allowed = held !== undefined && RANK[held] >= RANK[needed];
          outcomes.push(
            `${label}: ${AUTH_CODES.includes(code) ? status[code] : 'passed the token layer'}`,
          );
          expected.push(
            `${label}: ${held === undefined ? 'UNAUTHENTICATED' : allowed ? 'passed the token layer' : 'PERMISSION_DENIED'}`,
          );
          if (code === status.PERMISSION_DENIED) {
            expect(details).to.equal(
              `${rpc.name} needs the ${needed} role; the token "${token!.name}" has the ${held} role`,
            );
          }
        }
        expect(outcomes).to.deep.equal(expected);
      });
    }

    it('lets each role do its work end to end', async () => {
      const as = (token: TestToken) => connectStore(store.address, { token: token.token });
      const [asReader, asWriter, asAdmin] = [as(reader), as(writer), as(admin)];
      try {
        const defined = await asAdmin.defineModel({ model: RATE_MODEL });
        expect(defined.model?.name).to.equal('rate');
        const put = await asWriter.put({
          model: 'rate',
          values: pack({
            hotel_id: 1,
            room_type: 'r',
            check_in_date: 'd',
            gateway: 'g',
            discount_type: 't',
          }),
          requestId: requestId(),
        });
        const read = await asReader.getCell({
          model: 'rate',
          uuid: put.uuid,
          cell: 'base',
          refKey: undefined,
        });
        expect(read.cell?.uuid).to.equal(put.uuid);
        const refused = await rejection(asReader.defineModel({ model: RATE_MODEL }));
        expect(refused.code).to.equal(status.PERMISSION_DENIED);
      } finally {
        for (const api of [asReader, asWriter, asAdmin]) api.close();
      }
    });

    it('keeps grpc.health.v1.Health open to callers without a token', async () => {
      const check = healthService.Check!;
      const response = await new Promise<{ status: unknown }>((resolve, reject) =>
        store.api.client.makeUnaryRequest(
          check.path,
          check.requestSerialize,
          check.responseDeserialize,
          { service: 'shameless.v1.Store' },
          new Metadata(),
          { deadline: Date.now() + 15_000 },
          (error, value) => (error ? reject(error) : resolve(value as { status: unknown })),
        ),
      );
      expect(response.status).to.equal('SERVING');
    });

    it('takes the scheme in any case, and only one authorization value', async () => {
      const describe = RPCS.find((rpc) => rpc.name === 'DescribeStore')!;
      expect((await statusOf(describe, `bearer ${reader.token}`)).code).to.equal(status.OK);
      expect((await statusOf(describe, `Bearer  ${reader.token}`)).code).to.equal(status.OK);
      expect((await statusOf(describe, `Bearer ${reader.token} extra`)).code).to.equal(
        status.UNAUTHENTICATED,
      );
      expect((await statusOf(describe, 'Bearer')).code).to.equal(status.UNAUTHENTICATED);
    });
  });

  describe('the tokens file', () => {
    const fileWith = (name: string, text: string) => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    };
    const refusal = (path: string): string => {
      try {
        new TokenSet(path);
      } catch (error) {
        expect(error).to.be.instanceOf(TokensFileError);
        return (error as Error).message;
      }
      throw new Error('expected the tokens file to be refused');
    };
    const digest = sha256Hex('a token');

    it('says which entry and field is wrong', () => {
      const entries = (...tokens: unknown[]) => JSON.stringify({ tokens });
      expect(
        refusal(fileWith('role.json', entries({ name: 'a', role: 'root', sha256: digest }))),
      ).to.match(/role\.json: tokens\[0\]\.role must be one of reader, writer, admin/);
      expect(
        refusal(
          fileWith(
            'hex.json',
            entries({ name: 'a', role: 'reader', sha256: digest.toUpperCase() }),
          ),
        ),
      ).to.match(/tokens\[0\]\.sha256 must be 64 lowercase hex digits/);
      expect(
        refusal(
          fileWith(
            'twice.json',
            entries(
              { name: 'a', role: 'reader', sha256: digest },
              { name: 'b', role: 'admin', sha256: digest },
            ),
          ),
        ),
      ).to.match(/tokens\[1\]\.sha256 is the same token as an earlier entry/);
      expect(
        refusal(
          fileWith(
            'names.json',
            entries(
              { name: 'a', role: 'reader', sha256: digest },
              { name: 'a', role: 'reader', sha256: sha256Hex('b') },
            ),
          ),
        ),
      ).to.match(/tokens\[1\]\.name "a" is used twice/);
      expect(refusal(fileWith('shape.json', '{"readers":[]}'))).to.match(/must hold \{"tokens":\[/);
      expect(refusal(join(dir, 'absent.json'))).to.match(
        /cannot read the tokens file .*absent\.json \(ENOENT\)/,
      );
    });

    it('never quotes the file when it is not JSON (it may hold a pasted token)', () => {
      const message = refusal(fileWith('pasted.json', '{"tokens": [s3cr3t-pasted-token]}'));
      expect(message).to.contain('is not valid JSON');
      expect(message).not.to.contain('s3cr3t');
    });

    it('keeps its tokens when a reload finds a bad file', () => {
      const path = join(dir, 'reload.json');
      const first = newToken('first', 'reader');
      writeTokensFile(path, [first]);
      const tokens = new TokenSet(path);
      writeFileSync(path, '{"tokens": [');
      expect(() => tokens.reload()).to.throw(TokensFileError);
      expect(tokens.holderOf(first.token)).to.deep.equal({ name: 'first', role: 'reader' });
      const second = newToken('second', 'writer');
      writeTokensFile(path, [second]);
      tokens.reload();
      expect(tokens.holderOf(first.token)).to.equal(undefined);
      expect(tokens.holderOf(second.token)).to.deep.equal({ name: 'second', role: 'writer' });
    });
  });
});
