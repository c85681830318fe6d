/// The Lua scripts of cluster mode (docs/cluster.md), each atomic inside Redis. Loaded with
/// `SCRIPT LOAD` at connect and called with `EVALSHA`; keys are built from the prefix in
/// ARGV, so the cluster runs on one Redis (not Redis Cluster) and several clusters can share
/// one with different prefixes.
enum ClusterScripts {
    /// A batch of events in runs (`ClusterRecord`): ARGV per run = its channel, its event
    /// count, its targets and its records (concatenated, in publish order). Targets are the
    /// nodes with interest (comma-separated indexes), led by `!` when the run is not kept in
    /// history (`req` and `$sys`), followed by `|` and the queue groups it matches
    /// (`KEYLEN:PATTERN GROUP` repeated; a run with groups holds one event).
    ///
    /// Per run, not per event: the channel's `seq` rises by the count in one `HINCRBY`, the
    /// message `LAST COUNT\nRECORDS` is made once, kept in history as one entry
    /// (`ClusterHistoryScripts.keep`) and appended to each target node's output; for each
    /// group, one node is picked (`routing`) and gets the run with ` o`/` gLEN` tags and the
    /// group block after the records. Then one `PUBLISH` goes to each target node.
    ///
    /// Returns the last `seq` and the number of nodes it went to, per run in order. A call of
    /// one plain run goes to `publishOne` instead.
    ///
    /// Idempotent publish (docs/cluster.md): a run of one event led by `~LEN:ID` in its
    /// targets is looked up first in `{p}d:CH\0ID` (`SET … PX dedup_window_ms`); when there,
    /// it is not published, and its pair is the first one's `seq` and `-1 - nodes`. The ids
    /// are listed in `{p}dq`, which drops (and deletes) the oldest past this shard's share of
    /// `max_dedup_ids`.
    ///
    /// What it costs inside Redis is its contract (docs/benchmarks.md, "Redis instructions per
    /// cluster op"): four `ARGV` per run; per run `HINCRBY` of `seq` and of `cb`, `XADD`,
    /// `PUBLISH`; numbers formatted with `%d` (Lua's own number-to-string goes through
    /// `%.14g`, and so does Redis's for a number handed to `redis.call`, each twice the cost).
    static func publish(_ parameters: ClusterScriptParameters) -> String {
        parameters.prelude + routing + #"""
        local out, order, results = {}, {}, {}
        local function add(node, message)
          local parts = out[node]
          if parts == nil then
            out[node] = { message }
            order[#order + 1] = node
          else
            parts[#parts + 1] = message
          end
        end
        local route, framed
        local i, k = 1, 0
        while i + 3 <= #ARGV do
          local ch, count, targets, blob = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
          i = i + 4
          local n, mk = tonumber(count), M .. ch
          local kept, groups, dk, prev = HIST > 0, nil, nil, nil
          if string.find(targets, '[!|~]') then
            if string.byte(targets) == 126 then
              local colon = string.find(targets, ':', 2, true)
              local len = tonumber(string.sub(targets, 2, colon - 1))
              dk = p .. 'd:' .. ch .. '\0' .. string.sub(targets, colon + 1, colon + len)
              targets = string.sub(targets, colon + len + 1)
              prev = redis.call('GET', dk)
            end
            if string.byte(targets) == 33 then kept, targets = false, string.sub(targets, 2) end
            local bar = string.find(targets, '|', 1, true)
            if bar then groups, targets = string.sub(targets, bar + 1), string.sub(targets, 1, bar - 1) end
          end
          local last, reached
          if prev then
            local space = string.find(prev, ' ', 1, true)
            last, reached = tonumber(string.sub(prev, 1, space - 1)), -1 - tonumber(string.sub(prev, space + 1))
          else
          last = redis.call('HINCRBY', mk, 'seq', count)
          local msg = f('%d %s\n%s', last, count, blob)
          if kept then
            local bytes = #blob + 40 * n
            local cum = redis.call('HINCRBY', mk, 'cb', f('%d', bytes))

        """# + ClusterHistoryScripts.keep(ch: "ch", mk: "mk", last: "last", n: "n", msg: "msg", cum: "cum", bytes: "bytes") + #"""
          end
          reached = 0
          if groups then
            if route == nil then route, framed = routing() end
            local nodes, picked, plain = route(targets, groups)
            local head = f('%d %s', last, count)
            for _, node in ipairs(nodes) do add(node, framed(head, node, blob, picked, plain)) end
            reached = #nodes
          elseif targets ~= '' then
            if string.find(targets, ',', 1, true) then
              for node in string.gmatch(targets, '[^,]+') do
                add(node, msg)
                reached = reached + 1
              end
            else
              add(targets, msg)
              reached = 1
            end
          end
          if dk and DMAX > 0 then
            redis.call('SET', dk, f('%d %d', last, reached), 'PX', DWIN)
            if redis.call('LPUSH', p .. 'dq', dk) > DMAX then redis.call('DEL', redis.call('RPOP', p .. 'dq')) end
          end
          end
          k = k + 1
          results[2 * k - 1] = last
          results[2 * k] = reached
        end
        for _, node in ipairs(order) do
          local parts = out[node]
          -- One run for a node (the common case) is published as it is, without another copy.
          if #parts == 1 then
            redis.call('PUBLISH', N .. node, parts[1])
          else
            redis.call('PUBLISH', N .. node, table.concat(parts))
          end
        end
        return results
        """#
    }

    /// The common call, one run kept in history with no queue group and at most one target
    /// node: ARGV = channel, count, target (a node index, or '' for none), records. Returns
    /// the run's last `seq` alone (the node knows where the run went).
    ///
    /// `publish` less what this call does not need: every string made, every string parsed
    /// as a number (`tonumber` of a string goes through `strtod`, about 1,500 instructions
    /// inside Redis, as much as a `%d` format), every closure and table costs the call (an
    /// array reply alone is about 4,500), and the call's whole budget is a few times that.
    static func publishOne(_ parameters: ClusterScriptParameters) -> String {
        parameters.prelude + #"""
        local ch, count, target, blob = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
        local mk = M .. ch
        local last = redis.call('HINCRBY', mk, 'seq', count)
        local msg = f('%d %s\n%s', last, count, blob)
        if HIST > 0 then
          local n = 1
          if count ~= '1' then n = tonumber(count) end
          local bytes = #blob + 40 * n
          local cum = redis.call('HINCRBY', mk, 'cb', f('%d', bytes))

        """# + ClusterHistoryScripts.keep(ch: "ch", mk: "mk", last: "last", n: "n", msg: "msg", cum: "cum", bytes: "bytes") + #"""
        end
        if target ~= '' then redis.call('PUBLISH', N .. target, msg) end
        return last
        """#
    }

    /// Queue-group routing every event script shares (`p`, the prefix, must be set first),
    /// made only by a call that has groups: `routing()` returns `route, framed`.
    ///
    /// `route(targets, groups)`: the target nodes (comma-separated) get the event for their
    /// plain subscribers; for each group (`KEYLEN:PATTERN GROUP` repeated), one node from the
    /// member counts in `{p}g:PATTERN GROUP` (nodes whose liveness key is gone left out), by
    /// the group's counter `rr` turned once (slot `rr mod members`, nodes in index order, each
    /// owning as many slots as it has members). Returns the nodes in order, the groups picked
    /// per node, and which nodes are plain targets. `framed(head, node, blob, picked, plain)`
    /// is what one node gets: `HEAD[ o][ gLEN]\n` + the records + the group block.
    static let routing = #"""
    local function routing()
    local alive = {}
    local function isAlive(node)
      local known = alive[node]
      if known == nil then
        known = redis.call('EXISTS', p .. 'alive:' .. node) == 1
        alive[node] = known
      end
      return known
    end
    local function route(targets, groups)
      local plain, picked, nodes = {}, {}, {}
      for node in string.gmatch(targets, '[^,]+') do
        plain[node] = true
        nodes[#nodes + 1] = node
      end
      local at = 1
      while at <= #groups do
        local colon = string.find(groups, ':', at, true)
        if colon == nil then break end
        local len = tonumber(string.sub(groups, at, colon - 1)) or 0
        local key = string.sub(groups, colon + 1, colon + len)
        at = colon + 1 + len
        local gk = p .. 'g:' .. key
        local layout = redis.call('HGETALL', gk)
        local members, total = {}, 0
        for j = 1, #layout, 2 do
          local here = tonumber(layout[j + 1])
          if layout[j] ~= 'rr' and here and here > 0 and isAlive(layout[j]) then
            members[#members + 1] = { tonumber(layout[j]), here }
            total = total + here
          end
        end
        if total > 0 then
          table.sort(members, function(a, b) return a[1] < b[1] end)
          local slot = (redis.call('HINCRBY', gk, 'rr', 1) - 1) % total
          for _, m in ipairs(members) do
            if slot < m[2] then
              local node = tostring(m[1])
              local list = picked[node]
              if list == nil then
                list = {}
                picked[node] = list
                if not plain[node] then nodes[#nodes + 1] = node end
              end
              list[#list + 1] = #key .. ':' .. key
              break
            end
            slot = slot - m[2]
          end
        end
      end
      return nodes, picked, plain
    end
    local function framed(head, node, blob, picked, plain)
      local list = picked[node]
      if list == nil then return head .. '\n' .. blob end
      local block = table.concat(list)
      local tags = ' g' .. #block
      if not plain[node] then tags = ' o' .. tags end
      return head .. tags .. '\n' .. blob .. block
    end
    return route, framed
    end

    """#

    /// One interest change: ARGV = prefix, node, `+` or `-`, pattern. Bumps the interest
    /// version, updates the node's set and announces `+NODE VERSION PATTERN` (or `-…`) on
    /// the interest channel, all at one version. Returns the version.
    static let interest = ClusterNodeScripts.refuseDead("ARGV[2]") + """
    local p = ARGV[1]
    local v = redis.call('INCR', p .. 'iv')
    if ARGV[3] == '+' then
      redis.call('SADD', p .. 'i:' .. ARGV[2], ARGV[4])
    else
      redis.call('SREM', p .. 'i:' .. ARGV[2], ARGV[4])
    end
    redis.call('PUBLISH', p .. 'interest', ARGV[3] .. ARGV[2] .. ' ' .. v .. ' ' .. ARGV[4])
    return v
    """

    /// The routing table at one version: ARGV = prefix. Returns {version, node, patterns,
    /// node, patterns, …} for every node whose liveness key is set.
    static let snapshot = liveNodes + """
    for _, node in ipairs(live) do
      out[#out + 1] = node
      out[#out + 1] = redis.call('SMEMBERS', p .. 'i:' .. node)
    end
    return out
    """

    /// A snapshot of per-owner records (locks, handlers): every live node's owners, listed
    /// in the set `{p}OWNERS NODE`, each with what `read` returns of `{p}RECORDS OWNER`.
    /// Returns `{version, owner, records, owner, records, …}`.
    static func ownerSnapshot(owners: String, records: String, read: String) -> String {
        liveNodes + """
        for _, node in ipairs(live) do
          for _, owner in ipairs(redis.call('SMEMBERS', p .. '\(owners)' .. node)) do
            out[#out + 1] = owner
            out[#out + 1] = redis.call('\(read)', p .. '\(records)' .. owner)
          end
        end
        return out
        """
    }

    /// The start every snapshot script shares (interest, locks, links): ARGV[1] is the
    /// prefix; `out` starts with the interest version, `live` lists the registered nodes
    /// whose liveness key is set.
    static let liveNodes = """
    local p = ARGV[1]
    local out = { tonumber(redis.call('GET', p .. 'iv') or '0') }
    local live = {}
    for _, node in ipairs(redis.call('HKEYS', p .. 'nodes')) do
      if redis.call('EXISTS', p .. 'alive:' .. node) == 1 then live[#live + 1] = node end
    end

    """
}
