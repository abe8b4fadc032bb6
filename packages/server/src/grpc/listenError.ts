// What a failed bind of the gRPC server means for the operator. grpc-js reports every cause as
// "No address added out of total N resolved errors: [...]" with Node's listen error inside.

/** The server could not bind its address; the message names it and says what to do. */
export class ListenError extends Error {}

const CAUSES: readonly { code: string; explain: string }[] = [
  {
    code: 'EADDRINUSE',
    explain:
      'the address is in use by another program (another `shameless serve`?). ' +
      'Stop it, or listen elsewhere with --listen host:port (SHAMELESS_LISTEN; port 0 picks a free one)',
  },
  {
    code: 'EACCES',
    explain:
      'permission denied (ports below 1024 need privileges). Pick a port above 1023 with --listen host:port',
  },
  {
    code: 'EADDRNOTAVAIL',
    explain:
      'no network interface of this machine has that address. Use one of its addresses, 127.0.0.1 or 0.0.0.0 in --listen',
  },
];

export function listenError(listen: string, error: Error): ListenError {
  const cause = CAUSES.find(({ code }) => error.message.includes(code));
  const explain = cause?.explain ?? `${error.message}. Check --listen host:port (SHAMELESS_LISTEN)`;
  return new ListenError(`cannot listen on ${listen}: ${explain}`);
}
