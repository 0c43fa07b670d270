package redis

import goredis "github.com/redis/go-redis/v9"

// The Lua scripts. Redis runs each atomically, so a settlement's copy and
// the XACK of its original commit together. Each one writes the copy before
// it acks: a script that fails half-way leaves the copy and the original,
// a duplicate the idempotency claim absorbs, never a loss.

// receiveScript moves due retry copies (the delayed set, KEYS[1]) to the
// retry stream (KEYS[2]), then reads up to ARGV[3] new entries for consumer
// ARGV[2] of group ARGV[1]: the retry stream's first, then the source's
// (KEYS[3]). It returns {retry entries, source entries, the next due time
// ("" when none), Redis's time, the consumer's pending entries of the retry
// stream from ARGV[5], those of the source stream from ARGV[6]} (XPENDING
// extended replies, up to ARGV[3] each, listed before the reads), both
// times in Unix milliseconds.
var receiveScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))
for _, m in ipairs(due) do
  local fields = {}
  local pos = string.find(m, '|', 1, true) + 1
  while pos <= #m do
    local c = string.find(m, ':', pos, true)
    local n = tonumber(string.sub(m, pos, c - 1))
    fields[#fields + 1] = string.sub(m, c + 1, c + n)
    pos = c + n + 1
  end
  redis.call('XADD', KEYS[2], '*', unpack(fields))
  redis.call('ZREM', KEYS[1], m)
end
local max = tonumber(ARGV[3])
local out = {{}, {}, '', now}
out[5] = redis.call('XPENDING', KEYS[2], ARGV[1], ARGV[5], '+', max, ARGV[2])
out[6] = redis.call('XPENDING', KEYS[3], ARGV[1], ARGV[6], '+', max, ARGV[2])
local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', max, 'STREAMS', KEYS[2], '>')
if r then out[1] = r[1][2] end
if #out[1] < max then
  local s = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', max - #out[1], 'STREAMS', KEYS[3], '>')
  if s then out[2] = s[1][2] end
end
local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if nxt[2] then out[3] = nxt[2] end
return out
`)

// reclaimScript claims for consumer ARGV[2] up to ARGV[5] entries of
// stream KEYS[1] pending in group ARGV[1] for at least ARGV[3] ms, from
// cursor ARGV[4] (XAUTOCLAIM), and acks the IDs XAUTOCLAIM found deleted
// from the stream (ghosts: XAUTOCLAIM drops them from the list, the XACK
// makes sure). It returns {next cursor, entries, ghost IDs, delivery
// counts of the entries (after the claim)}.
var reclaimScript = goredis.NewScript(`
local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', ARGV[5])
local ghosts = r[3] or {}
local counts = {}
for i, e in ipairs(r[2]) do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], e[1], e[1], 1)
  if p[1] then counts[i] = p[1][4] else counts[i] = 1 end
end
if #ghosts > 0 then redis.call('XACK', KEYS[1], ARGV[1], unpack(ghosts)) end
return {r[1], r[2], ghosts, counts}
`)

// retryScript stores a retry copy (ARGV[5]) in the delayed set KEYS[2],
// due ARGV[4] ms from now by Redis's clock, rounded up, then acks entry
// ARGV[2] of stream KEYS[1] for group ARGV[1] (and deletes it when ARGV[3]
// is "1": the retry stream keeps only what is unsettled). It does nothing
// and returns 0 unless the entry is pending with consumer ARGV[6]: a Source
// whose lease ended leaves the entry to the one that reclaimed it.
var retryScript = goredis.NewScript(`
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if not p[1] or p[1][2] ~= ARGV[6] then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.ceil(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[5])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] == '1' then redis.call('XDEL', KEYS[1], ARGV[2]) end
return 1
`)

// deadLetterScript appends a dead-letter copy (fields ARGV[5]…) to the
// dead-letter stream KEYS[2], then acks (and with ARGV[3] "1" deletes)
// entry ARGV[2] of KEYS[1] for group ARGV[1]; like retryScript it returns 0
// and writes nothing unless the entry is pending with consumer ARGV[4].
var deadLetterScript = goredis.NewScript(`
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if not p[1] or p[1][2] ~= ARGV[4] then return 0 end
redis.call('XADD', KEYS[2], '*', unpack(ARGV, 5))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] == '1' then redis.call('XDEL', KEYS[1], ARGV[2]) end
return 1
`)

// delConsumerScript deletes consumer ARGV[2] of group ARGV[1] from every
// stream in KEYS, only when it holds no pending entry on any of them, and
// returns 1 when it did.
var delConsumerScript = goredis.NewScript(`
for _, k in ipairs(KEYS) do
  local p = redis.call('XPENDING', k, ARGV[1], '-', '+', 1, ARGV[2])
  if #p > 0 then return 0 end
end
for _, k in ipairs(KEYS) do redis.call('XGROUP', 'DELCONSUMER', k, ARGV[1], ARGV[2]) end
return 1
`)

// releaseScript ends the lease of the entries ARGV[5]… of stream KEYS[1]
// still pending with consumer ARGV[2] of group ARGV[1]: their idle time
// becomes ARGV[3] ms and their delivery counter ARGV[4] (XCLAIM … JUSTID,
// which does not raise it). Entries another consumer reclaimed are left
// alone. It returns how many it released.
var releaseScript = goredis.NewScript(`
local n = 0
for i = 5, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'IDLE', ARGV[3], 'RETRYCOUNT', ARGV[4], 'JUSTID')
    n = n + 1
  end
end
return n
`)

// renewScript resets the idle time of the entries ARGV[3]… of stream
// KEYS[1] still pending with consumer ARGV[2] of group ARGV[1] (XCLAIM …
// JUSTID: the delivery counter stays) and returns the IDs that are not:
// reclaimed by another consumer, settled, or deleted from the stream.
var renewScript = goredis.NewScript(`
local lost = {}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then
    local c = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
    if #c == 0 then lost[#lost + 1] = ARGV[i] end
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
`)
