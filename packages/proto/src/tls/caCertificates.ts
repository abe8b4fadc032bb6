// A CA file checked when it is read: the server's (serve's --tls-client-ca, a client command's
// --tls-ca) and the SDK's (connect's tls.ca), which must not depend on the server. Node takes
// any bytes as CA certificates without a word: text that holds no certificate, a private key,
// or the peer's own certificate instead of the CA that signed it all load, and the mistake
// shows only at each handshake, as a peer "not trusted", far from the option at fault.
import { X509Certificate } from 'node:crypto';

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;

/**
 * Why `pem` cannot be the CA file that `peer` certificates are checked against, with what to
 * give instead; undefined when one of its certificates can vouch for a peer's: a CA
 * certificate, or a self-signed one (a peer's own, trusted as it is). A bundle may hold other
 * certificates besides.
 */
export function caFileProblem(pem: Buffer, peer: 'server' | 'client'): string | undefined {
  const blocks = [...pem.toString('latin1').matchAll(PEM_BLOCK)];
  const certificates = blocks.filter(([, label]) => label === 'CERTIFICATE');
  const giveCa = `give the PEM file of the CA that issued the ${peer}'s certificate`;
  if (certificates.length === 0) {
    const found = blocks.length > 0 ? ` (it holds a ${blocks[0]![1]})` : '';
    return `holds no PEM certificate ("-----BEGIN CERTIFICATE-----")${found}: ${giveCa}`;
  }
  const parsed: X509Certificate[] = [];
  for (const [index, [block]] of certificates.entries()) {
    try {
      parsed.push(new X509Certificate(block));
    } catch {
      return `holds a PEM certificate that does not parse (number ${index + 1} in the file): ${giveCa}`;
    }
  }
  if (parsed.some((certificate) => certificate.ca || isSelfSigned(certificate))) return undefined;
  const { subject, issuer } = parsed[0]!;
  return (
    `holds no CA certificate: ${nameOf(subject)}, issued by ${nameOf(issuer)}, is not a CA (it ` +
    `cannot vouch for another certificate); ${giveCa} (for this one, ${nameOf(issuer)})`
  );
}

function isSelfSigned(certificate: X509Certificate): boolean {
  return certificate.checkIssued(certificate) && certificate.verify(certificate.publicKey);
}

/** A distinguished name on one line (Node puts each attribute on its own). */
function nameOf(name: string): string {
  return name.split('\n').join(', ');
}
