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
