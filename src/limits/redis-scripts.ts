// The limiter's Lua scripts: each decides and counts atomically in one round trip. Windows and
// block times come from the caller's clock (ARGV), not Redis's, so tests can move time.
import type { Redis } from 'ioredis';

// KEYS: req, msg, calls, block. ARGV: requestCap, messageCap, isMessage, quota, windowTtlMs,
// skipQuota, now (-1 = no cap), tokens wanted (≥ 1), share divisor. Returns {verdict, requests,
// messages, apiCalls, granted}; verdict 0 ok, 1 request cap, 2 message cap, 3 quota, 4 the
// quota counter needs seeding from the database, 5 the IP is blocked (apiCalls = until).
// `granted` tokens (≥ 1, this request's included) were counted on the request and quota counters.
const ADMIT_LUA = `
local reqCap = tonumber(ARGV[1])
local msgCap = tonumber(ARGV[2])
local isMsg = ARGV[3] == '1'
local quota = tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])
local skipQuota = ARGV[6] == '1'
local blockedUntil = redis.call('GET', KEYS[4])
if blockedUntil and tonumber(blockedUntil) > tonumber(ARGV[7]) then return {5, 0, 0, tonumber(blockedUntil), 0} end
local req = tonumber(redis.call('GET', KEYS[1]) or '0')
if reqCap >= 0 and req + 1 > reqCap then return {1, req, 0, 0, 0} end
local msg = 0
if isMsg then
  msg = tonumber(redis.call('GET', KEYS[2]) or '0')
  if msgCap >= 0 and msg + 1 > msgCap then return {2, req, msg, 0, 0} end
end
local calls = redis.call('GET', KEYS[3])
if calls then
  calls = tonumber(calls)
  if quota >= 0 and calls >= quota then return {3, req, msg, calls, 0} end
elseif not skipQuota then
  return {4, req, msg, 0, 0}
end
local grant = tonumber(ARGV[8])
local div = tonumber(ARGV[9])
if reqCap >= 0 then grant = math.min(grant, math.max(1, math.floor((reqCap - req) / div))) end
if calls and quota >= 0 then grant = math.min(grant, math.max(1, math.floor((quota - calls) / div))) end
req = redis.call('INCRBY', KEYS[1], grant)
redis.call('PEXPIRE', KEYS[1], ttl)
if isMsg then
  msg = redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], ttl)
end
if calls then calls = redis.call('INCRBY', KEYS[3], grant) else calls = 0 end
return {0, req, msg, calls, grant}
`;

// KEYS: req, calls. ARGV: unused tokens of a lease. Gives them back (never below zero).
const RETURN_LUA = `
for i = 1, 2 do
  local cur = redis.call('GET', KEYS[i])
  if cur then redis.call('DECRBY', KEYS[i], math.min(tonumber(ARGV[1]), tonumber(cur))) end
end
return 0
`;

// KEYS: bad, block. ARGV: now, windowMs, max, blockMs, ttlMs. Returns 0 counted, 1 this hit
// blocks the IP, 2 the IP was already blocked (not counted).
const INVALID_KEY_LUA = `
local now = tonumber(ARGV[1])
local blockedUntil = redis.call('GET', KEYS[2])
if blockedUntil and tonumber(blockedUntil) > now then return 2 end
local start = tonumber(redis.call('HGET', KEYS[1], 's') or '-1')
local n
if start < 0 or now - start >= tonumber(ARGV[2]) or now < start then
  redis.call('HSET', KEYS[1], 's', now, 'n', 1)
  n = 1
else
  n = redis.call('HINCRBY', KEYS[1], 'n', 1)
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if n > tonumber(ARGV[3]) then
  redis.call('SET', KEYS[2], now + tonumber(ARGV[4]), 'PX', ARGV[5])
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;

// KEYS: calls. ARGV: recorded. Raises the quota counter to what the database recorded (calls
// counted while Redis was down, or 402s of a plan without API); never lowers it.
const RAISE_LUA = `
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local diff = tonumber(ARGV[1]) - tonumber(cur)
if diff > 0 then redis.call('INCRBY', KEYS[1], diff) end
return diff
`;

// KEYS: counter. ARGV: cap (-1 = none), ttlMs, k. Counts k when they all fit under the cap.
// Returns {1, count after} when counted, {0, count now} when not (nothing counted).
const TAKE_LUA = `
local cap = tonumber(ARGV[1])
local k = tonumber(ARGV[3])
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if cap >= 0 and n + k > cap then return {0, n} end
n = redis.call('INCRBY', KEYS[1], k)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, n}
`;

export type AdmitReply = [number, number, number, number, number];
export interface LimitsCommands {
  chasquiAdmit(req: string, msg: string, calls: string, block: string, ...args: (string | number)[]): Promise<AdmitReply>;
  chasquiReturn(req: string, calls: string, tokens: number): Promise<number>;
  chasquiInvalidKey(bad: string, block: string, ...args: (string | number)[]): Promise<number>;
  chasquiRaise(calls: string, recorded: number): Promise<number>;
  chasquiTake(counter: string, cap: number, ttlMs: number, k: number): Promise<[number, number]>;
}

/** Registers the scripts as commands of this connection (ioredis sends EVALSHA, EVAL on a miss). */
export function defineLimitsCommands(redis: Redis): Redis & LimitsCommands {
  redis.defineCommand('chasquiAdmit', { numberOfKeys: 4, lua: ADMIT_LUA });
  redis.defineCommand('chasquiReturn', { numberOfKeys: 2, lua: RETURN_LUA });
  redis.defineCommand('chasquiInvalidKey', { numberOfKeys: 2, lua: INVALID_KEY_LUA });
  redis.defineCommand('chasquiRaise', { numberOfKeys: 1, lua: RAISE_LUA });
  redis.defineCommand('chasquiTake', { numberOfKeys: 1, lua: TAKE_LUA });
  return redis as Redis & LimitsCommands;
}
