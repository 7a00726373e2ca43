import { describe, expect, it } from 'vitest';
import { isPrivateAddress, isPrivateLiteral, parseWebhookUrl } from './ssrf.js';

describe('SSRF guard (docs/webhooks.md: loopback, private or link-local addresses are refused)', () => {
  it('classifies addresses', () => {
    for (const ip of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '224.0.0.1',
    ])
      expect(isPrivateAddress(ip), ip).toBe(true);
    for (const ip of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700:4700::1111']) expect(isPrivateAddress(ip), ip).toBe(false);
  });

  it('"An IPv6 address that carries an IPv4 one … is judged by that IPv4 address" (docs/webhooks.md)', () => {
    for (const ip of [
      '64:ff9b:1::a9fe:a9fe', // local-use NAT64: refused as a whole
      '64:ff9b:1::808:808',
      '64:ff9b::a9fe:a9fe', // well-known NAT64 of 169.254.169.254
      '::a9fe:a9fe', // IPv4-compatible
      '::7f00:1',
      '::ffff:a9fe:a9fe', // IPv4-mapped
      '2002:a9fe:a9fe::', // 6to4 of 169.254.169.254
      '2002:0a00:0001::1', // 6to4 of 10.0.0.1
      '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
      '2001:db8::1', // documentation
    ])
      expect(isPrivateAddress(ip), ip).toBe(true);
    // The same forms reaching a public IPv4 (a DNS64 network answers every IPv4-only name so).
    for (const ip of ['64:ff9b::808:808', '::ffff:808:808', '2002:808:808::1']) expect(isPrivateAddress(ip), ip).toBe(false);
    for (const url of ['http://[64:ff9b:1::a9fe:a9fe]/', 'http://[::a9fe:a9fe]/', 'http://[2002:a9fe:a9fe::]/'])
      expect(isPrivateLiteral(new URL(url)), url).toBe(true);
  });

  it('accepts only http and https URLs', () => {
    expect(parseWebhookUrl('https://example.com/x').hostname).toBe('example.com');
    expect(() => parseWebhookUrl('ftp://example.com')).toThrow();
    expect(() => parseWebhookUrl('nope')).toThrow();
  });

  it('spots private IP literals in URLs, bracketed IPv6 included', () => {
    expect(isPrivateLiteral(new URL('http://[::1]:8080/'))).toBe(true);
    expect(isPrivateLiteral(new URL('http://127.0.0.1/'))).toBe(true);
    expect(isPrivateLiteral(new URL('http://8.8.8.8/'))).toBe(false);
    expect(isPrivateLiteral(new URL('http://example.com/'))).toBe(false);
  });
});
