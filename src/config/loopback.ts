import { isIP } from 'node:net';

/**
 * Loopback addresses and host names, one rule for every server patchloop runs (the console, the
 * gateway's MCP route): what only this machine reaches.
 */

/** A socket address of this machine only: `127.x.x.x` or `::1` (IPv4-mapped too). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
  return plain === '::1' || (isIP(plain) === 4 && plain.startsWith('127.'));
}

/** `localhost`, `127.x.x.x` or `[::1]`, with or without a port. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d+$/, '');
  return name === 'localhost' || name === '[::1]' || (isIP(name) === 4 && name.startsWith('127.'));
}
