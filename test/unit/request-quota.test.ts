/**
 * The address part a quota counts (request-quota.ts): IPv4 as is, IPv4-mapped IPv6 as IPv4,
 * IPv6 by its /64 whatever its spelling.
 */
import { describe, expect, it } from 'vitest';
import { addressQuotaKey } from '../../src/limits/request-quota.js';

describe('addressQuotaKey', () => {
  it('keeps IPv4 addresses, also IPv4-mapped ones', () => {
    expect(addressQuotaKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressQuotaKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('counts IPv6 by the /64, however it is written', () => {
    const key = '2001:db8:0:7::/64';
    for (const ip of [
      '2001:db8:0:7::1',
      '2001:0db8:0000:0007:ffff:1:2:3',
      '2001:DB8:0:7:a::',
      '2001:db8:0:7::1%eth0',
      '2001:db8:0:7:1:2:1.2.3.4',
    ])
      expect(addressQuotaKey(ip), ip).toBe(key);
    expect(addressQuotaKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressQuotaKey('::1')).toBe('0:0:0:0::/64');
    expect(addressQuotaKey('2001:db8:0:8::1')).not.toBe(key);
  });
});
