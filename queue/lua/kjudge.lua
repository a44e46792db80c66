#!lua name=kjudge
-- kjudge server-side functions (design §8). Every multi-key write of the queue happens here, so
-- C++, Python and redis-cli clients all get the same atomic submit/complete.
--
-- Loaded with FUNCTION LOAD REPLACE: kjudged does it at start (this file is embedded into
-- libkjqueue at build time); the Python client's load_functions() reads it from the source tree.
-- Key names are built by the clients (queue/src/keys.cpp, python/kjudge/keys.py); all keys of one
-- call share the partition hash tag {pN}.
--
-- A function that raises midway is NOT rolled back: every argument is checked before the first write.

local GROUP = 'kjudged'                  -- the consumer group of every jobs stream
local MARKER_TTL_S = 7 * 24 * 3600        -- how long a job id stays deduplicated
local DONE_MAXLEN = '100000'              -- completion events are notifications; results live in their own keys

local function check(ok, message)
  if not ok then error(redis.error_reply('ERR kjudge: ' .. message)) end
end

local function valid_tenant(s)
  return type(s) == 'string' and #s >= 1 and #s <= 64 and string.match(s, '^[a-z0-9_%-]+$') ~= nil
end

local function valid_job_id(s)
  return type(s) == 'string' and #s >= 1 and #s <= 128 and string.match(s, '^[A-Za-z0-9._:%-]+$') ~= nil
end

local function valid_entry_id(s)
  return type(s) == 'string' and string.match(s, '^%d+%-%d+$') ~= nil
end

-- XGROUP CREATE ... MKSTREAM, tolerating an existing group.
local function ensure_group(stream)
  local r = redis.pcall('XGROUP', 'CREATE', stream, GROUP, '0', 'MKSTREAM')
  if type(r) == 'table' and r.err and not string.find(r.err, 'BUSYGROUP', 1, true) then
    error(r)
  end
end

-- kj_submit  KEYS: jobs-stream job-marker tenants-set   ARGV: job_id payload tenant
-- -> {entry_id, duplicate (0|1)}. Idempotent by job id for MARKER_TTL_S.
local function kj_submit(keys, args)
  check(#keys == 3 and #args == 3, 'kj_submit needs 3 keys and 3 arguments')
  local job_id, payload, tenant = args[1], args[2], args[3]
  check(valid_tenant(tenant), 'invalid tenant (want [a-z0-9_-]{1,64})')
  check(valid_job_id(job_id), 'invalid job id (want [A-Za-z0-9._:-]{1,128})')

  local existing = redis.call('GET', keys[2])
  if existing then return {existing, 1} end

  ensure_group(keys[1])
  local entry_id = redis.call('XADD', keys[1], '*', 'id', job_id, 'job', payload)
  redis.call('SET', keys[2], entry_id, 'EX', MARKER_TTL_S)
  redis.call('SADD', keys[3], tenant)
  -- (later: admission/quotas, priorities, batch counters)
  return {entry_id, 0}
end

-- kj_complete  KEYS: result done-stream jobs-stream   ARGV: entry_id job_id result verdict ttl_s
-- -> 1 when this call stored the result, 0 when one existed already (first wins). Always acks.
local function kj_complete(keys, args)
  check(#keys == 3 and #args == 5, 'kj_complete needs 3 keys and 5 arguments')
  local entry_id, job_id, result, verdict, ttl = args[1], args[2], args[3], args[4], tonumber(args[5])
  check(valid_entry_id(entry_id), 'invalid stream entry id')
  check(ttl ~= nil and ttl >= 1 and ttl == math.floor(ttl), 'invalid result ttl')

  local stored = redis.call('SET', keys[1], result, 'NX', 'EX', ttl) ~= false
  if stored then
    redis.call('XADD', keys[2], 'MAXLEN', '~', DONE_MAXLEN, '*', 'id', job_id, 'status', verdict)
  end
  -- (later: lease ownership check, retry/dead-letter accounting, batch counters)
  redis.call('XACK', keys[3], GROUP, entry_id)
  if stored then return 1 end
  return 0
end

redis.register_function('kj_submit', kj_submit)
redis.register_function('kj_complete', kj_complete)
