/// The Lua scripts of cluster mode's retained state and catch-up (docs/cluster.md,
/// "Retained values and lists" and "`seq`, history, `since`"), each atomic inside Redis.
///
/// Keys (prefix `{p}`): `{p}s:CH` hash (`rev`, `k` = `v` value / `l` list / `t` tombstone,
/// `v` the value, `c` content bytes, `is` the list items' bytes, `u` the user holding it),
/// `{p}l:CH` list items, `{p}sk` sorted set of channels holding content (for `current` on a
/// pattern), `{p}rb` retained bytes of the data set, `{p}ub:USER` a user's retained bytes.
enum ClusterStateScripts {
    /// The history every event script shares, defined first in each (`p`, the prefix, and
    /// `histcfg`, `HISTORY HISTORY_BYTES` from one ARGV, must be set before it).
    ///
    /// History is kept per channel in a stream `{p}h:CH` whose entries are *runs*: the
    /// events of one channel in one script call, id `LAST-0` (the run's last `seq`), fields
    /// `n` (events), `b` (bytes: records + 40 per event, as on one node), `s` (a stamp from
    /// the data set's counter `{p}hs`, for age across channels), `r` (the records). One
    /// `XADD` per channel per batch instead of per event is what lets Redis keep up with a
    /// busy channel. The channel's meta hash keeps `hn` (events) and `hb` (bytes) in history.
    ///
    /// Each run's id, count, bytes and stamp also go into a list `{p}hr:CH` beside the
    /// stream, so trimming reads numbers, never a run's records.
    ///
    /// `record(ch, last, count, blob)` appends a run, then drops the channel's oldest runs
    /// while the rest still hold `history` events (so a channel keeps at least `history`
    /// and fewer than `history` + one run). `settle()`, at the end of the script, adds the
    /// call's bytes to `{p}hb` and, while that is above `history_bytes`, drops the oldest
    /// run of the data set, whatever its channel: `{p}hi` is a sorted set of channels by
    /// their oldest run's stamp, so each such eviction is O(log channels).
    static let history = """
    local hist, hbytes = string.match(histcfg, '^(%d+) (%d+)$')
    hist, hbytes = tonumber(hist), tonumber(hbytes)
    local addedbytes = 0
    -- The runs' bookkeeping, oldest first, in a list beside the stream (`{p}hr:CH`, items
    -- `ID COUNT BYTES STAMP`): reading the oldest run's numbers from the stream itself would
    -- copy its records into Lua, the whole run, on every trim step.
    local function oldest(ch)
      local head = redis.call('LINDEX', p .. 'hr:' .. ch, 0)
      if not head then return nil end
      local id, count, size, stamp = string.match(head, '^(%S+) (%d+) (%d+) (%d+)$')
      return id, tonumber(count), tonumber(size), tonumber(stamp)
    end
    local function drop(ch, id)
      redis.call('XDEL', p .. 'h:' .. ch, id)
      redis.call('LPOP', p .. 'hr:' .. ch)
    end
    local function record(ch, last, count, blob)
      if hist <= 0 then return end
      local hk, meta = p .. 'h:' .. ch, p .. 'm:' .. ch
      local size = #blob + 40 * count
      local stamp = redis.call('INCR', p .. 'hs')
      -- An id at or below the stream's last (a data set restored from an older copy) is
      -- refused by Redis: the run is then not kept, as with history 0.
      local added = redis.pcall('XADD', hk, last .. '-0', 'n', count, 'b', size, 's', stamp, 'r', blob)
      if type(added) == 'table' and added.err then return end
      redis.call('RPUSH', p .. 'hr:' .. ch, added .. ' ' .. count .. ' ' .. size .. ' ' .. stamp)
      local st = redis.call('HMGET', meta, 'hn', 'hb')
      local hn, hb = tonumber(st[1] or '0'), tonumber(st[2] or '0')
      if hn == 0 then redis.call('ZADD', p .. 'hi', stamp, ch) end
      hn, hb = hn + count, hb + size
      addedbytes = addedbytes + size
      local moved = false
      while hn > hist do
        local id, ocount, osize = oldest(ch)
        if id == nil or hn - ocount < hist then break end
        drop(ch, id)
        hn, hb, addedbytes, moved = hn - ocount, hb - osize, addedbytes - osize, true
      end
      if moved then
        local _, _, _, ostamp = oldest(ch)
        if ostamp then redis.call('ZADD', p .. 'hi', ostamp, ch) end
      end
      redis.call('HSET', meta, 'hn', hn, 'hb', hb)
    end
    local function settle()
      if hist <= 0 or addedbytes == 0 then return end
      local total = redis.call('INCRBY', p .. 'hb', addedbytes)
      while total > hbytes do
        local ch = redis.call('ZRANGE', p .. 'hi', 0, 0)[1]
        if ch == nil then break end
        local meta = p .. 'm:' .. ch
        local id, ocount, osize = oldest(ch)
        if id == nil then
          redis.call('ZREM', p .. 'hi', ch)
        else
          drop(ch, id)
          redis.call('HINCRBY', meta, 'hn', -ocount)
          redis.call('HINCRBY', meta, 'hb', -osize)
          total = redis.call('DECRBY', p .. 'hb', osize)
          local _, _, _, nstamp = oldest(ch)
          if nstamp == nil then redis.call('ZREM', p .. 'hi', ch) else redis.call('ZADD', p .. 'hi', nstamp, ch) end
        end
      end
    end

    """

    /// One state op. ARGV: prefix, targets (comma-separated node indexes), the queue groups
    /// the channel matches (`ClusterScripts.routing`), op, channel, from,
    /// if_rev ('' none), `HISTORY HISTORY_BYTES`, max_value_bytes, max_list_length, max_retained_bytes, user
    /// ('' none), the user's retained_bytes ('' none), value (set/append/assign; splice: the
    /// raw `insert`), index, remove, is-list ('1'), then the elements (set of an array,
    /// splice's insert).
    ///
    /// Checks in the single node's order (type, range, `if_rev`, limits), then writes, bumps
    /// `rev`, gives the change event the channel's next `seq` (the counter `pub` uses),
    /// appends it to history and publishes it to the target nodes, one member of each
    /// matching queue group for the whole cluster, as for a `pub`. Returns `{0, rev, seq
    /// [, index]}` (seq 0: no change, no event), `{0, rev, value, ch}` for `get`, or
    /// `{1, code, message, rev}`.
    static let state = "local p, histcfg = ARGV[1], ARGV[8]\n" + history + ClusterScripts.routing + """
    local targets, groups, op, ch = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
    local from, ifrev = ARGV[6], ARGV[7]
    local maxvalue = tonumber(ARGV[9])
    local maxlen, maxret = tonumber(ARGV[10]), tonumber(ARGV[11])
    local user, ulimit = ARGV[12], tonumber(ARGV[13])
    local value, index, remove = ARGV[14], tonumber(ARGV[15]), tonumber(ARGV[16])
    local islist = ARGV[17] == '1'
    local sk, lk = p .. 's:' .. ch, p .. 'l:' .. ch
    local st = redis.call('HMGET', sk, 'rev', 'k', 'c', 'is', 'u')
    local rev = tonumber(st[1] or '0')
    local kind = st[2] or ''
    local content = tonumber(st[3] or '0')
    local isum = tonumber(st[4] or '0')
    local holder = st[5] or ''
    local has = kind == 'v' or kind == 'l'
    local count = 0
    if kind == 'l' then count = redis.call('LLEN', lk) else isum = 0 end
    local function listbytes(sum, n)
      if n == 0 then return 2 end
      return 2 + sum + n - 1
    end
    local function contentvalue()
      if kind == 'v' then return redis.call('HGET', sk, 'v') end
      if kind == 'l' then return '[' .. table.concat(redis.call('LRANGE', lk, 0, -1), ',') .. ']' end
      return 'null'
    end
    local function pushall(key, items, first)
      for i = first, #items, 1000 do
        redis.call('RPUSH', key, unpack(items, i, math.min(i + 999, #items)))
      end
    end
    if op == 'get' then return {0, rev, contentvalue(), ch} end
    if op == 'touch' and not has then return {1, 'not_found', 'channel holds no value or list to touch', rev} end
    if (op == 'append' or op == 'assign' or op == 'splice') and kind == 'v' then
      return {1, 'type', "channel holds a value, not a list; 'set' an array to make it a list", rev}
    end
    if op == 'assign' and index >= count then
      return {1, 'range', 'index ' .. index .. ' is outside the list (length ' .. count .. ')', rev}
    end
    if op == 'splice' and (index > count or remove > count - index) then
      return {1, 'range', 'index ' .. index .. ' with remove ' .. remove .. ' is outside the list (length ' .. count .. ')', rev}
    end
    if ifrev ~= '' and tonumber(ifrev) ~= rev then
      return {1, 'conflict', 'if_rev ' .. ifrev .. " does not match the channel's rev " .. rev, rev}
    end
    if op == 'del' and not has then return {0, rev, 0} end
    local elements = {}
    for i = 18, #ARGV do elements[#elements + 1] = ARGV[i] end
    local nkind, ncontent, nsum, ncount = kind, content, isum, count
    if op == 'set' then
      if islist then
        nkind, nsum, ncount = 'l', 0, #elements
        for _, e in ipairs(elements) do nsum = nsum + #e end
        ncontent = listbytes(nsum, ncount)
      else
        nkind, ncontent, nsum, ncount = 'v', #value, 0, 0
      end
    elseif op == 'append' then
      nkind, nsum, ncount = 'l', isum + #value, count + 1
      ncontent = listbytes(nsum, ncount)
    elseif op == 'assign' then
      nsum = isum - #redis.call('LINDEX', lk, index) + #value
      ncontent = listbytes(nsum, ncount)
    elseif op == 'splice' then
      local gone, added = 0, 0
      if remove > 0 then
        for _, e in ipairs(redis.call('LRANGE', lk, index, index + remove - 1)) do gone = gone + #e end
      end
      for _, e in ipairs(elements) do added = added + #e end
      nkind, nsum, ncount = 'l', isum - gone + added, count - remove + #elements
      ncontent = listbytes(nsum, ncount)
    elseif op == 'del' then
      nkind, ncontent, nsum, ncount = 't', 0, 0, 0
    end
    local before = 0
    if has then before = #ch + content end
    local after = 0
    if nkind == 'v' or nkind == 'l' then after = #ch + ncontent end
    if op ~= 'touch' and op ~= 'del' then
      if ncontent > maxvalue then
        return {1, 'limit', 'value would be ' .. ncontent .. ' bytes, above max_value_bytes (' .. maxvalue .. ')', rev}
      end
      if nkind == 'l' and ncount > maxlen then
        return {1, 'limit', 'list would have ' .. ncount .. ' elements, above max_list_length (' .. maxlen .. ')', rev}
      end
      local growth = after - before
      if growth > 0 and tonumber(redis.call('GET', p .. 'rb') or '0') + growth > maxret then
        return {1, 'limit', 'retained state would pass max_retained_bytes (' .. maxret .. ' bytes)', rev}
      end
      if user ~= '' and ulimit then
        local charge = tonumber(redis.call('GET', p .. 'ub:' .. user) or '0')
        local mine = 0
        if holder == user then mine = before end
        if after > mine and charge - mine + after > ulimit then
          return {1, 'limit', 'user "' .. user .. '" would hold more than its ' .. ulimit ..
            ' bytes of retained state (user_limits.retained_bytes)', rev}
        end
      end
    end
    local nrev = rev
    local tail = ''
    if op == 'touch' then tail = ',"value":' .. contentvalue() end
    if op ~= 'touch' then
      nrev = rev + 1
      if after ~= before then redis.call('INCRBY', p .. 'rb', after - before) end
      if holder ~= '' and before > 0 then redis.call('DECRBY', p .. 'ub:' .. holder, before) end
      local nholder = ''
      if user ~= '' and after > 0 then
        nholder = user
        redis.call('INCRBY', p .. 'ub:' .. user, after)
      end
      if op == 'set' then
        redis.call('DEL', lk)
        if islist then
          pushall(lk, elements, 1)
          redis.call('HDEL', sk, 'v')
        else
          redis.call('HSET', sk, 'v', value)
        end
      elseif op == 'append' then
        redis.call('RPUSH', lk, value)
      elseif op == 'assign' then
        redis.call('LSET', lk, index, value)
      elseif op == 'splice' then
        local rest = redis.call('LRANGE', lk, index + remove, -1)
        if index == 0 then redis.call('DEL', lk) else redis.call('LTRIM', lk, 0, index - 1) end
        pushall(lk, elements, 1)
        pushall(lk, rest, 1)
      elseif op == 'del' then
        redis.call('DEL', lk)
        redis.call('HDEL', sk, 'v')
      end
      redis.call('HSET', sk, 'rev', nrev, 'k', nkind, 'c', ncontent, 'is', nsum, 'u', nholder)
      if after > 0 then redis.call('ZADD', p .. 'sk', 0, ch) else redis.call('ZREM', p .. 'sk', ch) end
    end
    local meta = p .. 'm:' .. ch
    local seq = redis.call('HINCRBY', meta, 'seq', 1)
    if seq == 1 then redis.call('HSET', meta, 'epoch', redis.call('GET', p .. 'epoch') or '') end
    local mid
    if op == 'set' then
      mid, tail = ',"kind":"set","rev":' .. nrev, ',"value":' .. value
    elseif op == 'append' then
      mid, tail = ',"kind":"index","rev":' .. nrev .. ',"index":' .. count, ',"value":' .. value
    elseif op == 'assign' then
      mid, tail = ',"kind":"index","rev":' .. nrev .. ',"index":' .. index, ',"value":' .. value
    elseif op == 'splice' then
      mid, tail = ',"kind":"splice","rev":' .. nrev .. ',"index":' .. index .. ',"remove":' .. remove, ',"insert":' .. value
    elseif op == 'del' then
      mid = ',"kind":"del","rev":' .. nrev
    else
      mid = ',"kind":"touch","rev":' .. nrev
    end
    local rec = from .. ' ' .. #ch .. ' ' .. #mid .. ' ' .. #tail .. '\\n' .. ch .. mid .. tail
    record(ch, seq, 1, rec)
    settle()
    local nodes, picked, plain = route(targets, groups)
    for _, node in ipairs(nodes) do
      redis.call('PUBLISH', p .. 'n:' .. node, framed(seq .. ' 1', node, rec, picked, plain))
    end
    if op == 'append' then return {0, nrev, seq, count} end
    return {0, nrev, seq}
    """

    /// What a `sub` with `current` or `since` needs. ARGV: prefix, targets (unused), pattern,
    /// is-wildcard ('1'), current ('1'), since ('' none), the most history entries and bytes
    /// to replay. Returns `{seq, oldest, currents, history}`: for `since`, the channel's `seq`
    /// and the oldest `seq` its history holds (0: none, or the replay did not fit the bounds,
    /// so `recovered` is false), and the newest runs holding events after `since` within the
    /// bounds as `LAST COUNT\nRECORDS` strings, oldest first (the first may also hold events
    /// at or below `since`: the node skips them); for `current`, `{name, rev, value, seq}` of every matching
    /// channel holding content, by name (a pattern reads the names under its literal prefix).
    /// After a reconnect: ARGV = prefix, then `channel seq` pairs, the last `seq` this node
    /// delivered on each channel. A channel whose counter is below it (the primary that
    /// died had not replicated the newest events, or Redis lost its data) is set to it, so
    /// no `seq` is handed out twice, and remembers it as `lost` (a `since` from before it is
    /// `recovered:false`: the events between are gone). Returns the channels whose counter
    /// is above it: events published there while this node could not hear (their history
    /// is read next, `Broker+ClusterResume`).
    static let resume = """
    local p = ARGV[1]
    local missed = {}
    for at = 2, #ARGV - 1, 2 do
      local meta, seq = p .. 'm:' .. ARGV[at], tonumber(ARGV[at + 1])
      local now = tonumber(redis.call('HGET', meta, 'seq') or '0')
      if now < seq then
        redis.call('HSET', meta, 'seq', seq)
        if tonumber(redis.call('HGET', meta, 'lost') or '0') < seq then redis.call('HSET', meta, 'lost', seq) end
        redis.call('HSETNX', meta, 'epoch', redis.call('GET', p .. 'epoch') or '')
      elseif now > seq then
        missed[#missed + 1] = ARGV[at]
      end
    end
    return missed
    """

    static let catchUp = """
    local p, pattern = ARGV[1], ARGV[3]
    local wild, cur, since, maxcount = ARGV[4] == '1', ARGV[5] == '1', ARGV[6], tonumber(ARGV[7])
    local maxbytes = tonumber(ARGV[8])
    local function split(s)
      local t = {}
      for token in string.gmatch(s, '[^.]+') do t[#t + 1] = token end
      return t
    end
    local pt = split(pattern)
    local function matches(name)
      local nt = split(name)
      for i, token in ipairs(pt) do
        if token == '>' then return #nt >= i end
        if nt[i] == nil then return false end
        if token ~= '*' and token ~= nt[i] then return false end
      end
      return #nt == #pt
    end
    local currents = {}
    if cur then
      local names = { pattern }
      if wild then
        local prefix = ''
        for _, token in ipairs(pt) do
          if token == '*' or token == '>' then break end
          prefix = prefix .. token .. '.'
        end
        local lo, hi = '-', '+'
        if prefix ~= '' then lo, hi = '[' .. prefix, '[' .. prefix .. '\\255' end
        names = redis.call('ZRANGEBYLEX', p .. 'sk', lo, hi)
      end
      for _, name in ipairs(names) do
        if (not wild) or matches(name) then
          local st = redis.call('HMGET', p .. 's:' .. name, 'rev', 'k', 'v')
          if st[2] == 'v' or st[2] == 'l' then
            local value = st[3]
            if st[2] == 'l' then value = '[' .. table.concat(redis.call('LRANGE', p .. 'l:' .. name, 0, -1), ',') .. ']' end
            local chseq = tonumber(redis.call('HGET', p .. 'm:' .. name, 'seq') or '0')
            currents[#currents + 1] = { name, tonumber(st[1]), value, chseq }
          end
        end
      end
    end
    local seq, first, recs = 0, 0, {}
    if since ~= '' then
      local hk = p .. 'h:' .. pattern
      seq = tonumber(redis.call('HGET', p .. 'm:' .. pattern, 'seq') or '0')
      local head = redis.call('LINDEX', p .. 'hr:' .. pattern, 0)
      if head then
        local id, count = string.match(head, '^(%d+)-%d+ (%d+) ')
        first = tonumber(id) - tonumber(count) + 1
      end
      local s = tonumber(since)
      -- Events lost with a Redis that failed over or lost its data (`resume`): a replay
      -- from before them is not complete, whatever history holds.
      if s < tonumber(redis.call('HGET', p .. 'm:' .. pattern, 'lost') or '0') then first = 0 end
      if s < seq then
        -- Newest run first, so a replay that does not fit keeps the latest events.
        local bytes, events, newest = 0, 0, {}
        for _, e in ipairs(redis.call('XREVRANGE', hk, '+', (s + 1) .. '-0', 'COUNT', maxcount + 1)) do
          local last, count = tonumber(string.match(e[1], '^(%d+)')), tonumber(e[2][2])
          bytes = bytes + #e[2][8]
          events = events + math.min(count, last - s)
          local fits = events <= maxcount and bytes <= maxbytes
          if not fits then first = 0 end
          -- The newest run always goes (the node keeps its newest events within the bounds).
          if not fits and #newest > 0 then break end
          newest[#newest + 1] = last .. ' ' .. count .. '\\n' .. e[2][8]
          if not fits then break end
        end
        for i = #newest, 1, -1 do recs[#recs + 1] = newest[i] end
      end
    end
    return { seq, first, currents, recs }
    """
}
