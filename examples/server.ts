// Where the examples find the server (SHAMELESS_ADDRESS, else pnpm start's 127.0.0.1:50051), and
// one line saying what to do when none answers there, instead of an UNAVAILABLE stack.
import { Client, credentials } from '@grpc/grpc-js';

export const address = process.env.SHAMELESS_ADDRESS ?? '127.0.0.1:50051';

/** Waits up to 3 s for the server to accept a connection; exits 1 with a hint when it does not. */
export async function requireServer(): Promise<void> {
  const client = new Client(address, credentials.createInsecure());
  try {
    await new Promise<void>((resolve, reject) =>
      client.waitForReady(Date.now() + 3000, (error) => (error ? reject(error) : resolve())),
    );
  } catch {
    console.error(
      `No Shameless server answers at ${address}: start one with \`pnpm start\` in another terminal, ` +
        'or point SHAMELESS_ADDRESS=host:port at a running one.',
    );
    process.exit(1);
  } finally {
    client.close();
  }
}
