#!lua name=kjudge
-- kjudge server-side functions (design §8). Every multi-key write of the queue happens here, so
-- C++, Python and redis-cli clients all get the same atomic submit/complete.
--
-- Loaded with FUNCTION LOAD REPLACE: kjudged does it at start (this file is embedded into
-- libkjqueue at build time); the Python client's load_functions() reads it from the source tree.
-- Key names are built by the clients (queue/src/keys.cpp, python/kjudge/keys.py); all keys of one
-- call share the partition hash tag {pN}, and every key a function touches is passed in KEYS.
--
-- A function that raises midway is NOT rolled back: every argument is checked before the first write.
--
-- Optional trailing KEYS may be passed as '' (empty string) when they do not apply.

local GROUP = 'kjudged'                  -- the consumer group of every jobs stream
local MARKER_TTL_S = 7 * 24 * 3600        -- how long batch counters live, and job ids stay deduplicated
                                          -- until a daemon publishes marker_ttl_s (kj:{pN}:config)
local DONE_MAXLEN = '100000'              -- completion events are notifications; results live in their own keys
local DEAD_MAXLEN = '100000'              -- dead letters kept for inspection
local DEAD_PAYLOAD_MAX = 64 * 1024        -- bytes of a dead letter's job payload kept; longer ones are cut
local DEFAULT_MAX_JOB_BYTES = 8 * 1024 * 1024  -- kj_submit's limit until a daemon publishes its own
local BREQ_MAXLEN = '100000'              -- build requests are hints: past this, the oldest go (judging nodes build)

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

local function present(key) return key ~= nil and key ~= '' end

-- Tenant users may FCALL any function (an ACL cannot name functions), and a function's commands run
-- under the caller's ACL: the functions that only kjudged and operators call refuse a caller that
-- cannot XACK (tenant users cannot) before their first write, so nothing is half done.
local function daemon_only(key, name)
  check(redis.acl_check_cmd('XACK', key, GROUP, '0-1'), name .. ' is for kjudged and operators, not tenant users')
end

-- The partition's config hash (kj:{pN}:config, written by kjudged at start): kj_submit's payload
-- limit and job marker TTL ([limits] max_job_bytes, [queue] marker_ttl_s).
local function config_of(stream_key)
  local tag = string.match(stream_key, '^kj:({p%d+}):')
  check(tag ~= nil, 'jobs stream name must start with kj:{pN}:')
  local key = 'kj:' .. tag .. ':config'
  local marker_ttl = tonumber(redis.call('HGET', key, 'marker_ttl_s') or '')
  if marker_ttl == nil or marker_ttl < 1 then marker_ttl = MARKER_TTL_S end
  return {max_job_bytes = tonumber(redis.call('HGET', key, 'max_job_bytes') or '') or DEFAULT_MAX_JOB_BYTES,
          marker_ttl = math.floor(marker_ttl),
          build_requests = redis.call('HGET', key, 'build_requests') == '1'}
end

-- A build request for a job just queued on `stream` (kj:{pN}:jobs:<tenant>[:high|:low]): the entry id
-- on the matching kj:{pN}:breq:<tenant>[...] stream, read by build nodes through their own group
-- (docs/capacity-plan.md step 3). Only while build nodes announced themselves (config build_requests).
local function request_build(stream, entry_id)
  local breq, n = string.gsub(stream, '^(kj:{p%d+}):jobs:', '%1:breq:', 1)
  if n == 1 then redis.call('XADD', breq, 'MAXLEN', '~', BREQ_MAXLEN, '*', 'e', entry_id) end
end

-- The housekeeper's fence (kj_housekeeper): true when `token` is the current holder's. A node that
-- lost the lease (paused, partitioned) and still thinks it holds it is refused here.
local function fence_holds(stream_key, lease_key, token)
  local tag = string.match(stream_key, '^kj:({p%d+}):')
  check(tag ~= nil and lease_key == 'kj:' .. tag .. ':housekeeper', 'fence must be kj:{pN}:housekeeper of the same partition')
  local v = redis.call('GET', lease_key)
  return v ~= false and string.match(v, ' (%d+)$') == token
end

-- XGROUP CREATE ... MKSTREAM, tolerating an existing group.
local function ensure_group(stream)
  local r = redis.pcall('XGROUP', 'CREATE', stream, GROUP, '0', 'MKSTREAM')
  if type(r) == 'table' and r.err and not string.find(r.err, 'BUSYGROUP', 1, true) then
    error(r)
  end
end

-- The group's last-delivered-id on `stream`: nil when the stream is missing or has no such group.
local function last_delivered(stream)
  local groups = redis.pcall('XINFO', 'GROUPS', stream)
  if type(groups) ~= 'table' or groups.err then return nil end
  for _, g in ipairs(groups) do
    local info = {}
    for k = 1, #g, 2 do info[g[k]] = g[k + 1] end
    if info['name'] == GROUP then return info['last-delivered-id'] end
  end
  return nil
end

-- kj_submit, two forms:
--   KEYS: jobs-stream job-marker tenants-set                 ARGV: job_id payload tenant
--   KEYS: jobs-stream job-marker queued-counter [batch-hash]  ARGV: job_id payload tenant tenants-set quotas-hash
--                                                                   [batch_id [batch_size]]
-- -> {entry_id, duplicate (0|1)}. Idempotent by job id for the marker TTL. A payload over the partition's
-- max_job_bytes (kj:{pN}:config, set by kjudged; 8 MiB until one has) is refused.
-- In the second form the shared keys (tenant set, quotas) are named in ARGV, not KEYS: FCALL
-- needs read-write access to every key in KEYS, and a tenant's ACL user may only read those two.
-- They carry the same {pN} hash tag, so they live in the same cluster slot.
-- Admission: when quotas-hash has a field for the tenant (else '*') and the tenant already has that
-- many jobs without a result (queued-counter), the call fails with "QUEUEFULL ..." and writes nothing.
-- batch_size (optional, > 0): how many jobs the batch will have; batch_done waits for that many.
local function kj_submit(keys, args)
  local legacy = (#keys == 3 and #args == 3)
  check(legacy or ((#keys == 3 or #keys == 4) and #args >= 5 and #args <= 7),
        'kj_submit needs 3 keys and 3 arguments, or 3-4 keys and 5-7 arguments')
  local job_id, payload, tenant = args[1], args[2], args[3]
  local tenants_key, quotas_key, queued_key, batch_key = keys[3], nil, nil, keys[4]
  if not legacy then tenants_key, quotas_key, queued_key = args[4], args[5], keys[3] end
  local batch = args[6] or ''
  local batch_size = tonumber(args[7] or '0')
  check(valid_tenant(tenant), 'invalid tenant (want [a-z0-9_-]{1,64})')
  check(valid_job_id(job_id), 'invalid job id (want [A-Za-z0-9._:-]{1,128})')
  check(batch == '' or valid_job_id(batch), 'invalid batch id (want [A-Za-z0-9._:-]{1,128})')
  check(batch == '' or present(batch_key), 'a batch id needs the batch key')
  check(batch_size ~= nil and batch_size >= 0, 'invalid batch size')
  local conf = config_of(keys[1])
  local limit = conf.max_job_bytes
  check(#payload >= 1 and #payload <= limit, 'job payload is ' .. #payload .. ' bytes, over the ' .. limit ..
        ' byte limit (kjudged [limits] max_job_bytes)')
  if not legacy then
    local tag = string.match(keys[1], '^kj:({p%d+}):')
    check(tag ~= nil and tenants_key == 'kj:' .. tag .. ':tenants' and quotas_key == 'kj:' .. tag .. ':quotas',
          'tenant set / quotas names must be kj:{pN}:tenants and kj:{pN}:quotas of the same partition')
  end

  local existing = redis.call('GET', keys[2])
  if existing then
    -- A write, same expiry: a client's WAIT after a duplicate then covers the original submission
    -- (WAIT waits for the connection's last replicated write; a pure read would make it return at once).
    local ttl = redis.call('PTTL', keys[2])
    if ttl > 0 then redis.call('PEXPIRE', keys[2], ttl) end
    return {existing, 1}
  end

  if quotas_key then
    local quota = redis.call('HGET', quotas_key, tenant) or redis.call('HGET', quotas_key, '*')
    quota = tonumber(quota)
    if quota ~= nil and quota >= 0 then
      local queued = tonumber(redis.call('GET', queued_key) or '0')
      if queued >= quota then
        return redis.error_reply('QUEUEFULL kjudge: tenant ' .. tenant .. ' has ' .. queued ..
                                 ' jobs waiting for a result (quota ' .. quota .. ')')
      end
    end
  end

  -- (only when needed: tenant ACL users then need no write access to shared keys)
  if redis.call('EXISTS', keys[1]) == 0 then ensure_group(keys[1]) end
  local entry_id
  if batch ~= '' then
    entry_id = redis.call('XADD', keys[1], '*', 'id', job_id, 'job', payload, 'batch', batch)
    redis.call('HINCRBY', batch_key, 'submitted', 1)
    if batch_size > 0 then redis.call('HSET', batch_key, 'expected', math.floor(batch_size)) end
    redis.call('EXPIRE', batch_key, MARKER_TTL_S)
  else
    entry_id = redis.call('XADD', keys[1], '*', 'id', job_id, 'job', payload)
  end
  if conf.build_requests then request_build(keys[1], entry_id) end
  redis.call('SET', keys[2], entry_id, 'EX', conf.marker_ttl)
  if redis.call('SISMEMBER', tenants_key, tenant) == 0 then redis.call('SADD', tenants_key, tenant) end
  if queued_key then redis.call('INCR', queued_key) end
  return {entry_id, 0}
end

-- A dead letter keeps at most DEAD_PAYLOAD_MAX bytes of the job; a longer one keeps its start, with
-- truncated=1 and job_bytes (its size): it is for inspection only, kj_dead_retry refuses it.
local function add_dead_letter(stream, job_id, entry_id, reason, batch, payload)
  local fields = {'id', job_id, 'entry', entry_id, 'reason', reason, 'batch', batch}
  if #payload > DEAD_PAYLOAD_MAX then
    table.insert(fields, 'truncated')
    table.insert(fields, '1')
    table.insert(fields, 'job_bytes')
    table.insert(fields, tostring(#payload))
    payload = string.sub(payload, 1, DEAD_PAYLOAD_MAX)
  end
  table.insert(fields, 'job')
  table.insert(fields, payload)
  redis.call('XADD', stream, 'MAXLEN', '~', DEAD_MAXLEN, '*', unpack(fields))
end

-- A batch's repair-turn tally (jobs that named a group: client_meta "group"). groups-hash holds,
-- per group, the lowest turn that ended OK (-1: none yet); the batch hash counts the groups, those
-- solved at turn 0 and those solved at any turn, and the highest turn seen. A result stored again
-- after a dead-letter retry can only lower a group's turn, so nothing is counted twice.
local function count_turn(batch_key, groups_key, group, turn, ok)
  local prev = redis.call('HGET', groups_key, group)
  local best = tonumber(prev or '-1')
  if not prev then redis.call('HINCRBY', batch_key, 'turns:groups', 1) end
  if ok and (best < 0 or turn < best) then
    redis.call('HSET', groups_key, group, turn)
    if best < 0 then redis.call('HINCRBY', batch_key, 'turns:solved', 1) end
    if turn == 0 then redis.call('HINCRBY', batch_key, 'turns:solved_first', 1) end
  elseif not prev then
    redis.call('HSET', groups_key, group, -1)
  end
  if turn > tonumber(redis.call('HGET', batch_key, 'turns:last') or '-1') then
    redis.call('HSET', batch_key, 'turns:last', turn)
  end
  redis.call('EXPIRE', groups_key, MARKER_TTL_S)
end

-- kj_complete  KEYS: result done-stream jobs-stream [queued-counter batch-hash dead-stream [groups-hash]]
--              ARGV: entry_id job_id result verdict ttl_s [batch_id dead_reason dead_payload [group turn]]
-- -> 1 when this call stored the result, 0 when one existed already (first wins). Always acks.
-- When this call stores the result: the completion event, the tenant's queued counter goes down,
-- the batch counts it (and emits one batch_done event when completed reaches submitted; a job
-- that named a group counts in the batch's turn tally, count_turn), and with a dead_reason the job
-- is copied to the dead-letter stream.
local function kj_complete(keys, args)
  check((#keys == 3 or #keys == 6 or #keys == 7) and (#args == 5 or #args == 8 or #args == 10),
        'kj_complete needs 3, 6 or 7 keys and 5, 8 or 10 arguments')
  local entry_id, job_id, result, verdict, ttl = args[1], args[2], args[3], args[4], tonumber(args[5])
  local batch, dead_reason, dead_payload = args[6] or '', args[7] or '', args[8] or ''
  local group, turn = args[9] or '', tonumber(args[10] or '0')
  check(valid_entry_id(entry_id), 'invalid stream entry id')
  check(ttl ~= nil and ttl >= 1 and ttl == math.floor(ttl), 'invalid result ttl')
  check(batch == '' or present(keys[5]), 'a batch id needs the batch key')
  check(dead_reason == '' or present(keys[6]), 'a dead letter needs the dead-letter stream key')
  check(group == '' or (batch ~= '' and present(keys[7])), 'a group needs a batch and the batch groups key')
  check(turn ~= nil and turn >= 0 and turn == math.floor(turn), 'invalid turn')
  daemon_only(keys[3], 'kj_complete')

  local stored = redis.call('SET', keys[1], result, 'NX', 'EX', ttl) ~= false
  if stored then
    redis.call('XADD', keys[2], 'MAXLEN', '~', DONE_MAXLEN, '*', 'id', job_id, 'status', verdict)
    if present(keys[4]) then
      if redis.call('DECR', keys[4]) < 0 then redis.call('SET', keys[4], '0') end
    end
    if batch ~= '' then
      local completed = redis.call('HINCRBY', keys[5], 'completed', 1)
      redis.call('HINCRBY', keys[5], 'verdict:' .. verdict, 1)
      local submitted = tonumber(redis.call('HGET', keys[5], 'submitted') or '0')
      local expected = tonumber(redis.call('HGET', keys[5], 'expected') or '0')
      if completed == submitted and completed >= expected then
        redis.call('XADD', keys[2], 'MAXLEN', '~', DONE_MAXLEN, '*', 'batch', batch, 'event', 'batch_done',
                   'completed', tostring(completed))
      end
      if group ~= '' then count_turn(keys[5], keys[7], group, turn, verdict == 'OK') end
    end
    if dead_reason ~= '' then add_dead_letter(keys[6], job_id, entry_id, dead_reason, batch, dead_payload) end
  end
  redis.call('XACK', keys[3], GROUP, entry_id)
  if stored then return 1 end
  return 0
end

-- kj_lease  KEYS: jobs-stream   ARGV: mode consumer lease_ms entry_id...
-- mode 'renew': every listed entry still pending on `consumer` is re-claimed by it with idle 0
-- (XCLAIM ... JUSTID: no new delivery counted). mode 'handback': the entry is left on `consumer` but
-- marked idle for lease_ms, so any node's reaper claims it at its next pass.
-- -> the listed entries that are no longer pending on `consumer` (the lease was lost, or acked).
local function kj_lease(keys, args)
  check(#keys == 1 and #args >= 3, 'kj_lease needs 1 key and at least 3 arguments')
  daemon_only(keys[1], 'kj_lease')
  local mode, consumer, lease_ms = args[1], args[2], tonumber(args[3])
  check(mode == 'renew' or mode == 'handback', 'kj_lease mode must be renew or handback')
  check(lease_ms ~= nil and lease_ms >= 1, 'invalid lease')
  for i = 4, #args do check(valid_entry_id(args[i]), 'invalid stream entry id') end
  local lost = {}
  for i = 4, #args do
    local id = args[i]
    local p = redis.pcall('XPENDING', keys[1], GROUP, id, id, 1, consumer)
    if type(p) == 'table' and not p.err and #p == 1 then
      if mode == 'renew' then
        redis.call('XCLAIM', keys[1], GROUP, consumer, 0, id, 'JUSTID')
      else
        redis.call('XCLAIM', keys[1], GROUP, consumer, 0, id, 'IDLE', tostring(math.floor(lease_ms)), 'JUSTID')
      end
    else
      table.insert(lost, id)
    end
  end
  return lost
end

-- kj_retry  KEYS: jobs-stream result retry-hash delayed-zset
--           ARGV: entry_id job_id payload attempt due_ms batch_id [lane]
-- An infrastructure failure: park the job until due_ms (unix ms) with its attempt count, ack the
-- entry (on its lane's stream, KEYS[1]). kj_promote puts it back on that lane's stream. A job whose
-- result exists already is only acked.
-- -> 1 when parked, 0 when a result existed.
local function kj_retry(keys, args)
  check(#keys == 4 and (#args == 6 or #args == 7), 'kj_retry needs 4 keys and 6 or 7 arguments')
  daemon_only(keys[1], 'kj_retry')
  local entry_id, job_id, payload, attempt, due, batch = args[1], args[2], args[3], tonumber(args[4]), tonumber(args[5]), args[6]
  local lane = args[7] or '0'
  check(lane == '1' or lane == '0' or lane == '-1', 'invalid lane (want 1, 0 or -1)')
  check(valid_entry_id(entry_id), 'invalid stream entry id')
  check(valid_job_id(job_id), 'invalid job id')
  check(attempt ~= nil and attempt >= 0 and due ~= nil, 'invalid attempt or due time')
  if redis.call('EXISTS', keys[2]) == 1 then
    redis.call('XACK', keys[1], GROUP, entry_id)
    return 0
  end
  redis.call('HSET', keys[3], job_id, payload, job_id .. '|attempt', tostring(attempt), job_id .. '|batch', batch,
             job_id .. '|lane', lane)
  redis.call('ZADD', keys[4], due, job_id)
  redis.call('XACK', keys[1], GROUP, entry_id)
  return 1
end

-- kj_promote  KEYS: jobs-stream retry-hash delayed-zset [high-stream low-stream]
--             ARGV: now_ms max [housekeeper-key token]
-- Moves parked jobs that are due back onto the stream of the lane they came from (fields id, job,
-- attempt[, batch]); without the lane streams, onto jobs-stream. -> how many moved.
-- With a fence (the elected housekeeper's key and token): refused with FENCED unless it holds.
local function kj_promote(keys, args)
  check((#keys == 3 or #keys == 5) and (#args == 2 or #args == 4), 'kj_promote needs 3 or 5 keys and 2 or 4 arguments')
  daemon_only(keys[1], 'kj_promote')
  local now, max = tonumber(args[1]), tonumber(args[2])
  check(now ~= nil and max ~= nil and max >= 1, 'invalid arguments')
  if #args == 4 and not fence_holds(keys[1], args[3], args[4]) then
    return redis.error_reply('FENCED kjudge: not the housekeeper (token ' .. args[4] .. ')')
  end
  local breq = config_of(keys[1]).build_requests
  local due = redis.call('ZRANGEBYSCORE', keys[3], '-inf', now, 'LIMIT', 0, max)
  for _, job_id in ipairs(due) do
    local v = redis.call('HMGET', keys[2], job_id, job_id .. '|attempt', job_id .. '|batch', job_id .. '|lane')
    if v[1] then
      local stream = keys[1]
      if #keys == 5 and v[4] == '1' then stream = keys[4] elseif #keys == 5 and v[4] == '-1' then stream = keys[5] end
      ensure_group(stream)
      local id
      if v[3] and v[3] ~= '' then
        id = redis.call('XADD', stream, '*', 'id', job_id, 'job', v[1], 'attempt', v[2] or '0', 'batch', v[3])
      else
        id = redis.call('XADD', stream, '*', 'id', job_id, 'job', v[1], 'attempt', v[2] or '0')
      end
      if breq then request_build(stream, id) end
    end
    redis.call('HDEL', keys[2], job_id, job_id .. '|attempt', job_id .. '|batch', job_id .. '|lane')
    redis.call('ZREM', keys[3], job_id)
  end
  return #due
end

-- kj_fetch  KEYS: high-stream normal-stream low-stream running-zset (one tenant's)
--           ARGV: consumer count aging_ms now_ms [tenant caps-hash lease_ms]
-- Reads up to `count` new entries for `consumer` (XREADGROUP, so they are pending on it), one at a
-- time from the lane whose oldest undelivered entry scores best: lane rank (1, 0, -1) x aging_ms +
-- how long that entry has waited (its id's time). A lower lane's job that has waited 2 x aging_ms
-- (from low to high) longer than the higher lane's oldest goes first: priorities without starvation.
-- Cluster-wide cap: when caps-hash has a field for the tenant (else '*'), at most that many of the
-- tenant's jobs run at once on all nodes together. running-zset holds one member per admitted
-- entry ('<lane>:<entry id>', score = lease expiry ms); members past their expiry (a dead node's)
-- are dropped first. The daemon renews members with its leases and removes them when done.
-- (caps-hash is named in ARGV, not KEYS, for the reason given at kj_submit: it is only read.)
-- -> {lane_index, entry, lane_index, entry, ...} with lane_index 1..3 (KEYS order), entry {id, fields}.
local function kj_fetch(keys, args)
  check(#keys == 4 and (#args == 4 or #args == 7), 'kj_fetch needs 4 keys and 4 or 7 arguments')
  daemon_only(keys[1], 'kj_fetch')
  local consumer, count, aging, now = args[1], tonumber(args[2]), tonumber(args[3]), tonumber(args[4])
  check(consumer ~= '' and count ~= nil and count >= 1 and aging ~= nil and aging >= 0 and now ~= nil,
        'invalid arguments')
  local lease = tonumber(args[7] or '0')
  if #args == 7 then
    check(valid_tenant(args[5]) and lease ~= nil and lease >= 1, 'invalid tenant or lease')
    local tag = string.match(keys[4], '^kj:({p%d+}):')
    check(tag ~= nil and args[6] == 'kj:' .. tag .. ':caps', 'caps hash must be kj:{pN}:caps of the same partition')
    local cap = tonumber(redis.call('HGET', args[6], args[5]) or redis.call('HGET', args[6], '*') or '')
    if cap ~= nil and cap >= 0 then
      redis.call('ZREMRANGEBYSCORE', keys[4], '-inf', now)
      count = math.min(count, cap - redis.call('ZCARD', keys[4]))
      if count < 1 then return {} end
    else
      lease = 0  -- no cap: nothing to count
    end
  end
  local rank = {1, 0, -1}
  -- the enqueue time (ms) of lane i's first entry after the group's last delivered one; nil: none
  local function head(i)
    if redis.call('TYPE', keys[i]).ok ~= 'stream' then return nil end  -- missing, or not ours to read
    local last = last_delivered(keys[i])
    if last == nil then  -- a stream made behind kj_submit's back (XADD by hand, a restore)
      ensure_group(keys[i])
      last = '0-0'
    end
    local e = redis.call('XRANGE', keys[i], '(' .. last, '+', 'COUNT', 1)
    if #e == 0 then return nil end
    return tonumber(string.match(e[1][1], '^(%d+)%-'))
  end
  local heads = {head(1), head(2), head(3)}
  local out = {}
  for _ = 1, count do
    local best, best_score = nil, nil
    for i = 1, 3 do
      if heads[i] then
        local score = rank[i] * aging + (now - heads[i])
        if best == nil or score > best_score then best, best_score = i, score end
      end
    end
    if best == nil then break end
    local r = redis.call('XREADGROUP', 'GROUP', GROUP, consumer, 'COUNT', 1, 'STREAMS', keys[best], '>')
    if r and r[1] and #r[1][2] > 0 then
      table.insert(out, best)
      table.insert(out, r[1][2][1])
      if lease > 0 then
        redis.call('ZADD', keys[4], now + lease, tostring(rank[best]) .. ':' .. r[1][2][1][1])
      end
    end
    heads[best] = head(best)
  end
  return out
end

-- kj_trim  KEYS: jobs-stream  ARGV: [housekeeper-key token] -> entries removed.
-- Never MAXLEN on a live queue (it drops unacknowledged jobs): trim by MINID below the oldest
-- pending entry, or, with nothing pending, below the group's last delivered entry.
-- With a fence: refused with FENCED unless the caller is the elected housekeeper.
local function kj_trim(keys, args)
  check(#keys == 1 and (#args == 0 or #args == 2), 'kj_trim needs 1 key and 0 or 2 arguments')
  daemon_only(keys[1], 'kj_trim')
  if #args == 2 and not fence_holds(keys[1], args[1], args[2]) then
    return redis.error_reply('FENCED kjudge: not the housekeeper (token ' .. args[2] .. ')')
  end
  if redis.call('EXISTS', keys[1]) == 0 then return 0 end
  local last = last_delivered(keys[1])
  if last == nil or last == '0-0' then return 0 end
  local minid = last
  local summary = redis.call('XPENDING', keys[1], GROUP)
  if tonumber(summary[1]) > 0 and summary[2] then minid = summary[2] end
  return redis.call('XTRIM', keys[1], 'MINID', minid)
end

-- kj_cancel  KEYS: cancel-marker   ARGV: ttl_s -> 1
-- Marks a job (or, with a batch marker key, a whole batch) cancelled: a daemon that has not started
-- it stores CANCELLED without running it; a running one is told, and its result becomes CANCELLED.
local function kj_cancel(keys, args)
  check(#keys == 1 and #args == 1, 'kj_cancel needs 1 key and 1 argument')
  local ttl = tonumber(args[1])
  check(ttl ~= nil and ttl >= 1, 'invalid ttl')
  redis.call('SET', keys[1], '1', 'EX', math.floor(ttl))
  return 1
end

-- kj_dead_retry  KEYS: dead-stream jobs-stream result queued-counter batch-hash
--                ARGV: dead_entry_id
-- Puts a dead-lettered job back on its stream with attempt 0: its INFRA_ERROR result is deleted,
-- the queued counter and the batch's completed counter undo its completion. -> the new entry id.
local function kj_dead_retry(keys, args)
  check(#keys == 5 and #args == 1, 'kj_dead_retry needs 5 keys and 1 argument')
  daemon_only(keys[2], 'kj_dead_retry')
  check(valid_entry_id(args[1]), 'invalid dead-letter entry id')
  local e = redis.call('XRANGE', keys[1], args[1], args[1])
  check(#e == 1, 'no such dead letter')
  local f = {}
  for i = 1, #e[1][2], 2 do f[e[1][2][i]] = e[1][2][i + 1] end
  check(valid_job_id(f['id']) and f['job'] ~= nil, 'dead letter without job id or payload')
  check(f['truncated'] == nil, 'dead letter keeps only the start of its ' .. (f['job_bytes'] or '?') ..
        '-byte job: the client must submit it again')
  ensure_group(keys[2])
  local id
  if f['batch'] and f['batch'] ~= '' then
    id = redis.call('XADD', keys[2], '*', 'id', f['id'], 'job', f['job'], 'attempt', '0', 'batch', f['batch'])
    if present(keys[5]) then redis.call('HINCRBY', keys[5], 'completed', -1) end
  else
    id = redis.call('XADD', keys[2], '*', 'id', f['id'], 'job', f['job'], 'attempt', '0')
  end
  redis.call('DEL', keys[3])
  if present(keys[4]) then redis.call('INCR', keys[4]) end
  redis.call('XDEL', keys[1], args[1])
  return id
end

-- kj_build_lease  KEYS: lease-key building-zset caps-hash [artifact-key]   ARGV: op owner ttl_ms tenant [capped]
-- The lease on one build (content key) of the shared build store: whoever holds it builds, others
-- wait for the artifact or for the lease to expire (its holder died). building-zset holds the
-- tenant's live build leases (score = expiry ms), so a cluster cap (caps-hash field for the tenant,
-- else '*') bounds its concurrent builds too when capped = '1'.
--   acquire -> 'ok' | 'capped' | 'built' (artifact-key exists: published since the caller looked)
--              | the holder's owner string
--   renew   -> 1 while `owner` still holds it (expiry pushed to now + ttl), else 0
--   release -> 1 when `owner` held it (deleted), else 0
local function kj_build_lease(keys, args)
  check((#keys == 3 or #keys == 4) and #args >= 4, 'kj_build_lease needs 3 or 4 keys and 4 or 5 arguments')
  check(redis.acl_check_cmd('SET', keys[1], 'x'), 'kj_build_lease is for kjudged, not tenant users')
  local op, owner, ttl, tenant = args[1], args[2], tonumber(args[3]), args[4]
  check(owner ~= '' and ttl ~= nil and ttl >= 1 and valid_tenant(tenant), 'invalid arguments')
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if op == 'acquire' then
    if keys[4] and redis.call('EXISTS', keys[4]) == 1 then return 'built' end
    redis.call('ZREMRANGEBYSCORE', keys[2], '-inf', now)
    if args[5] == '1' then
      local cap = tonumber(redis.call('HGET', keys[3], tenant) or redis.call('HGET', keys[3], '*') or '')
      if cap ~= nil and cap >= 0 and redis.call('ZCARD', keys[2]) >= cap then return 'capped' end
    end
    if not redis.call('SET', keys[1], owner, 'NX', 'PX', math.floor(ttl)) then
      return redis.call('GET', keys[1]) or ''
    end
    redis.call('ZADD', keys[2], now + ttl, keys[1])
    return 'ok'
  end
  local mine = redis.call('GET', keys[1]) == owner
  if op == 'renew' then
    if not mine then return 0 end
    redis.call('PEXPIRE', keys[1], math.floor(ttl))
    redis.call('ZADD', keys[2], now + ttl, keys[1])
    return 1
  end
  check(op == 'release', 'op must be acquire, renew or release')
  if not mine then return 0 end
  redis.call('DEL', keys[1])
  redis.call('ZREM', keys[2], keys[1])
  return 1
end

-- kj_housekeeper  KEYS: lease-key epoch-key   ARGV: op owner ttl_ms
-- One node of the partition runs the shared housekeeping (promote, trim, the reaper's scan, pruning):
-- the holder of lease-key, "<owner> <token>" with PX ttl_ms. The token (INCR of epoch-key at each new
-- holder) fences: kj_promote and kj_trim refuse a stale holder's token.
--   hold    -> the token while `owner` holds the lease after this call (taken when free, else
--              renewed when it is owner's), 0 when another owner holds it
--   release -> 1 when `owner` held it (deleted), else 0
local function kj_housekeeper(keys, args)
  check(#keys == 2 and #args == 3, 'kj_housekeeper needs 2 keys and 3 arguments')
  daemon_only(keys[1], 'kj_housekeeper')
  local op, owner, ttl = args[1], args[2], tonumber(args[3])
  check(owner ~= '' and not string.find(owner, ' ', 1, true) and ttl ~= nil and ttl >= 1, 'invalid arguments')
  local v = redis.call('GET', keys[1])
  local holder, token = nil, nil
  if v then holder, token = string.match(v, '^(%S+) (%d+)$') end
  if op == 'release' then
    if holder ~= owner then return 0 end
    redis.call('DEL', keys[1])
    return 1
  end
  check(op == 'hold', 'op must be hold or release')
  if v and holder ~= owner then return 0 end
  if not v then
    token = tostring(redis.call('INCR', keys[2]))
    redis.call('SET', keys[1], owner .. ' ' .. token, 'PX', math.floor(ttl))
  else
    redis.call('PEXPIRE', keys[1], math.floor(ttl))
  end
  return tonumber(token)
end

redis.register_function('kj_submit', kj_submit)
redis.register_function('kj_housekeeper', kj_housekeeper)
redis.register_function('kj_complete', kj_complete)
redis.register_function('kj_lease', kj_lease)
redis.register_function('kj_retry', kj_retry)
redis.register_function('kj_promote', kj_promote)
redis.register_function('kj_trim', kj_trim)
redis.register_function('kj_fetch', kj_fetch)
redis.register_function('kj_cancel', kj_cancel)
redis.register_function('kj_dead_retry', kj_dead_retry)
redis.register_function('kj_build_lease', kj_build_lease)
