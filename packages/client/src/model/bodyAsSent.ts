// Writes ask the server to leave a version's body out of the answer when it is the body sent
// (omit_body_as_sent): a body sent back costs both sides as much as the one sent. The version
// is then completed here with the very bytes the request carried.
import type { Cell as WireCell } from '@shameless/proto';

/** The answer's version, with `sent` as its body where the server left the body out. */
export function withBodyAsSent(
  version: WireCell | undefined,
  bodyOmitted: boolean,
  sent: Buffer,
): WireCell | undefined {
  return bodyOmitted && version !== undefined ? { ...version, body: sent } : version;
}
