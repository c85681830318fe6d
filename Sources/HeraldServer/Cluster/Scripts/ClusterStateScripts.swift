/// The Lua scripts of cluster mode's retained state and catch-up (docs/cluster.md,
/// "Retained values and lists" and "`seq`, history, `since`"), each atomic inside Redis.
///
/// Keys (prefix `{p}`): `{p}m:CH` the channel's hash: `seq` (its event counter, shared with
/// `pub`), `lost`, and its retained state: `rev`, `k` (`v` value / `l` list / `t` tombstone),
/// `v` the value, `c` content bytes, `is` the list items' bytes, `u` the user holding it;
/// `{p}l:CH` list items, `{p}sk` sorted set of channels holding content (for `current` on a
/// pattern), `{p}rb` retained bytes of the data set, `{p}ub:USER` a user's retained bytes.
/// State and counter share one hash so a state op reads and writes both with one `HMGET`
/// and one `HSET`.
enum ClusterStateScripts {
    /// One state op. ARGV: targets (as for `publish`: nodes, then `|` and the queue groups),
    /// op (`set`, `setl` for an array, `append`, `assign`, `splice`, `del`, `touch`, `get`),
    /// channel, from, value (set/append/assign; splice: the raw `insert`), if_rev ('' none),
    /// user (`LIMIT USER` with the user's `user_limits.retained_bytes`, '' none), index,
    /// remove, then the elements (setl, splice's insert). Trailing ARGV a call does not need
    /// are left out (a plain `set` sends five).
    ///
    /// Checks in the single node's order (type, range, `if_rev`, limits), then writes, bumps
    /// `rev`, gives the change event the channel's next `seq` (the counter `pub` uses),
    /// keeps it in history and publishes it to the target nodes, one member of each matching
    /// queue group for the whole cluster, as for a `pub`. Returns `{0, rev, seq, index,
    /// historyBytes}` (seq 0: no change, no event; index for `append`, else 0; the bytes the
    /// event added to history, which the node counts for `settle`), `{0, rev, value, ch}` for
    /// `get`, or `{1, code, message, rev}`.
    ///
    /// Its cost inside Redis (docs/benchmarks.md): a `set` of a value is one `HMGET`, one
    /// `HSET` (fields that did not change are not written), one `XADD`, one `PUBLISH`;
    /// `{p}rb`, `{p}ub:USER` and `{p}sk` are touched only when what they count changes.
    static func state(_ parameters: ClusterScriptParameters) -> String {
        parameters.prelude + #"""
        local targets, op, ch, from = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
        local value, ifrev, userarg = ARGV[5] or '', ARGV[6] or '', ARGV[7] or ''
        local index, remove = 0, 0
        if op == 'assign' or op == 'splice' then index, remove = tonumber(ARGV[8] or '0'), tonumber(ARGV[9] or '0') end
        local islist = op == 'setl'
        if islist then op = 'set' end
        local mk, lk = M .. ch, L .. ch
        local st = redis.call('HMGET', mk, 'seq', 'rev', 'k', 'c', 'u', 'cb')
        local seq = tonumber(st[1] or '0')
        local rev = tonumber(st[2] or '0')
        local kind = st[3] or ''
        local content = tonumber(st[4] or '0')
        local holder = st[5] or ''
        local has = kind == 'v' or kind == 'l'
        local count, isum = 0, 0
        if kind == 'l' then
          count = redis.call('LLEN', lk)
          isum = tonumber(redis.call('HGET', mk, 'is') or '0')
        end
        -- Closures are made only on the paths that use them: each costs the call.
        local function contentvalue()
          if kind == 'v' then return redis.call('HGET', mk, 'v') end
          if kind == 'l' then return '[' .. table.concat(redis.call('LRANGE', lk, 0, -1), ',') .. ']' end
          return 'null'
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
        if op == 'del' and not has then return f('%d 0 0 0', rev) end
        local elements = {}
        if islist or op == 'splice' then
          local firstelement = 10
          if islist then firstelement = 8 end
          for i = firstelement, #ARGV do elements[#elements + 1] = ARGV[i] end
        end
        -- A list's content bytes: `[`, the items, a comma between each two, `]`.
        local function listbytes(sum, n)
          if n == 0 then return 2 end
          return 2 + sum + n - 1
        end
        local function pushall(key, items, first)
          for i = first, #items, 1000 do
            redis.call('RPUSH', key, unpack(items, i, math.min(i + 999, #items)))
          end
        end
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
        local user, ulimit = '', nil
        if userarg ~= '' then
          local limit, name = string.match(userarg, '^(%d+) (.*)$')
          user, ulimit = name or '', tonumber(limit)
        end
        local before = 0
        if has then before = #ch + content end
        local after = 0
        if nkind == 'v' or nkind == 'l' then after = #ch + ncontent end
        if op ~= 'touch' and op ~= 'del' then
          if ncontent > MAXVALUE then
            return {1, 'limit', 'value would be ' .. ncontent .. ' bytes, above max_value_bytes (' .. MAXVALUE .. ')', rev}
          end
          if nkind == 'l' and ncount > MAXLEN then
            return {1, 'limit', 'list would have ' .. ncount .. ' elements, above max_list_length (' .. MAXLEN .. ')', rev}
          end
          local growth = after - before
          if growth > 0 and tonumber(redis.call('GET', p .. 'rb') or '0') + growth > MAXRET then
            return {1, 'limit', 'retained state would pass max_retained_bytes (' .. MAXRET .. ' bytes)', rev}
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
        local ls = f('%d', seq + 1)
        local fields = { 'seq', ls }
        local nrev, rs = rev, nil
        local tail = ''
        if op == 'touch' then tail = ',"value":' .. contentvalue() end
        if op ~= 'touch' then
          nrev = rev + 1
          rs = f('%d', nrev)
          fields[#fields + 1], fields[#fields + 2] = 'rev', rs
          if after ~= before then redis.call('INCRBY', p .. 'rb', after - before) end
          local nholder = ''
          if user ~= '' and after > 0 then nholder = user end
          if holder ~= '' and before > 0 and (holder ~= nholder or after ~= before) then
            redis.call('DECRBY', p .. 'ub:' .. holder, before)
            if nholder ~= '' then redis.call('INCRBY', p .. 'ub:' .. nholder, after) end
          elseif nholder ~= '' and (holder ~= nholder or before == 0) then
            redis.call('INCRBY', p .. 'ub:' .. nholder, after)
          end
          if nholder ~= holder then fields[#fields + 1], fields[#fields + 2] = 'u', nholder end
          if nkind ~= kind then fields[#fields + 1], fields[#fields + 2] = 'k', nkind end
          if ncontent ~= content then fields[#fields + 1], fields[#fields + 2] = 'c', f('%d', ncontent) end
          if nkind == 'l' and (nsum ~= isum or kind ~= 'l') then fields[#fields + 1], fields[#fields + 2] = 'is', f('%d', nsum) end
          if op == 'set' then
            if kind == 'l' then redis.call('DEL', lk) end
            if islist then
              pushall(lk, elements, 1)
              if kind == 'v' then redis.call('HDEL', mk, 'v') end
            else
              fields[#fields + 1], fields[#fields + 2] = 'v', value
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
            if kind == 'v' then redis.call('HDEL', mk, 'v') end
          end
          if after > 0 and before == 0 then
            redis.call('ZADD', p .. 'sk', 0, ch)
          elseif after == 0 and before > 0 then
            redis.call('ZREM', p .. 'sk', ch)
          end
        else
          rs = f('%d', nrev)
        end
        local mid
        if op == 'set' then
          mid, tail = ',"kind":"set","rev":' .. rs, ',"value":' .. value
        elseif op == 'append' then
          mid, tail = f(',"kind":"index","rev":%s,"index":%d', rs, count), ',"value":' .. value
        elseif op == 'assign' then
          mid, tail = f(',"kind":"index","rev":%s,"index":%d', rs, index), ',"value":' .. value
        elseif op == 'splice' then
          mid, tail = f(',"kind":"splice","rev":%s,"index":%d,"remove":%d', rs, index, remove), ',"insert":' .. value
        elseif op == 'del' then
          mid = ',"kind":"del","rev":' .. rs
        else
          mid = ',"kind":"touch","rev":' .. rs
        end
        local msg = ls .. ' 1\n' .. f('%s %d %d %d\n', from, #ch, #mid, #tail) .. ch .. mid .. tail
        local kept, cum = 0, 0
        if HIST > 0 then
          kept = #msg - #ls - 3 + 40
          cum = tonumber(st[6] or '0') + kept
          fields[#fields + 1], fields[#fields + 2] = 'cb', f('%d', cum)
        end
        redis.call('HSET', mk, unpack(fields))
        if HIST > 0 then
          local last = seq + 1

        """# + ClusterHistoryScripts.keep(ch: "ch", mk: "mk", last: "last", n: "1", msg: "msg", cum: "cum", bytes: "kept") + #"""
        end
        local bar = string.find(targets, '|', 1, true)
        if bar then

        """# + ClusterScripts.routing + #"""
          local route, framed = routing()
          local nodes, picked, plain = route(string.sub(targets, 1, bar - 1), string.sub(targets, bar + 1))
          local head = ls .. ' 1'
          local rec = string.sub(msg, #ls + 4)
          for _, node in ipairs(nodes) do redis.call('PUBLISH', N .. node, framed(head, node, rec, picked, plain)) end
        elseif targets ~= '' then
          if string.find(targets, ',', 1, true) then
            for node in string.gmatch(targets, '[^,]+') do redis.call('PUBLISH', N .. node, msg) end
          else
            redis.call('PUBLISH', N .. targets, msg)
          end
        end
        -- A string, not an array: an array reply costs the call thousands of instructions.
        if op == 'append' then return f('%d %d %d %d', nrev, seq + 1, count, kept) end
        return f('%d %d 0 %d', nrev, seq + 1, kept)
        """#
    }

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
      elseif now > seq then
        missed[#missed + 1] = ARGV[at]
      end
    end
    return missed
    """

    static let catchUp = """
    local function runLast(entry) return tonumber(string.match(entry[1], '^%d+')) or 0 end
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
          local st = redis.call('HMGET', p .. 'm:' .. name, 'rev', 'k', 'v', 'seq')
          if st[2] == 'v' or st[2] == 'l' then
            local value = st[3]
            if st[2] == 'l' then value = '[' .. table.concat(redis.call('LRANGE', p .. 'l:' .. name, 0, -1), ',') .. ']' end
            local chseq = tonumber(st[4] or '0')
            currents[#currents + 1] = { name, tonumber(st[1]), value, chseq }
          end
        end
      end
    end
    local seq, first, recs = 0, 0, {}
    -- A run as the node reads it (its head line, then the records), its event count and its
    -- records' bytes, in either history layout (ClusterHistoryScripts).
    local function runMessage(e)
      local fields = e[2]
      if fields[1] == 'r' then
        local msg = fields[2]
        local sp, nl = string.find(msg, ' ', 1, true), string.find(msg, '\\n', 1, true)
        return msg, tonumber(string.sub(msg, sp + 1, nl - 1)), #msg - nl
      end
      return runLast(e) .. ' ' .. fields[2] .. '\\n' .. fields[8], tonumber(fields[2]), #fields[8]
    end
    if since ~= '' then
      local hk = p .. 'h:' .. pattern
      seq = tonumber(redis.call('HGET', p .. 'm:' .. pattern, 'seq') or '0')
      local head = redis.call('XRANGE', hk, '-', '+', 'COUNT', 1)[1]
      if head then
        local _, count = runMessage(head)
        first = runLast(head) - count + 1
      end
      local s = tonumber(since)
      -- Events lost with a Redis that failed over or lost its data (`resume`): a replay
      -- from before them is not complete, whatever history holds.
      if s < tonumber(redis.call('HGET', p .. 'm:' .. pattern, 'lost') or '0') then first = 0 end
      if s < seq then
        -- Newest run first, so a replay that does not fit keeps the latest events.
        local bytes, events, newest, to, done = 0, 0, {}, '+', false
        while not done do
          local page = redis.call('XREVRANGE', hk, to, '-', 'COUNT', 64)
          for _, e in ipairs(page) do
            local last = runLast(e)
            if last <= s then
              done = true
              break
            end
            local msg, count, size = runMessage(e)
            bytes = bytes + size
            events = events + math.min(count, last - s)
            local fits = events <= maxcount and bytes <= maxbytes
            if not fits then first = 0 end
            -- The newest run always goes (the node keeps its newest events within the bounds).
            if not fits and #newest > 0 then
              done = true
              break
            end
            newest[#newest + 1] = msg
            if not fits then
              done = true
              break
            end
          end
          if #page < 64 then break end
          to = '(' .. page[#page][1]
        end
        for i = #newest, 1, -1 do recs[#recs + 1] = newest[i] end
      end
    end
    return { seq, first, currents, recs }
    """
}
