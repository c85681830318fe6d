/// The Lua scripts of cluster mode (docs/cluster.md), each atomic inside Redis. Loaded with
/// `SCRIPT LOAD` at connect and called with `EVALSHA`; keys are built from the prefix in
/// ARGV, so the cluster runs on one Redis (not Redis Cluster) and several clusters can share
/// one with different prefixes.
enum ClusterScripts {
    /// A batch of events in runs (`ClusterRecord`): ARGV = prefix, `HISTORY HISTORY_BYTES`,
    /// the number of runs, then per run its channel, target nodes (comma-separated indexes),
    /// `1` when it goes into history (`0` for `req` and `$sys`), the queue groups it matches
    /// (`KEYLEN:PATTERN GROUP` repeated; a run with groups holds one event), its event count
    /// and records (concatenated, in publish order).
    ///
    /// Per run, not per event: the channel's `seq` rises by the count in one `HINCRBY` (the
    /// meta keeps the data set's epoch on the first) and the run goes to history in one entry
    /// (`ClusterStateScripts.history`). For each group, one node from the member counts in
    /// `{p}g:PATTERN GROUP` (nodes whose liveness key is gone left out), by the group's
    /// counter `rr` turned once (slot `rr mod members`, nodes in index order, each owning as
    /// many slots as it has members). Then `LAST COUNT\n` + the records is appended to each
    /// target node's message (with ` o`/` gLEN` tags and the group block after the record
    /// for a node picked for groups), and one `PUBLISH` goes to each target node. Returns the
    /// last `seq` and the number of nodes it went to, per run in order.
    static let publish = "local p, histcfg = ARGV[1], ARGV[2]\n" + ClusterStateScripts.history + routing + """
    local runs = tonumber(ARGV[3])
    local epoch = redis.call('GET', p .. 'epoch') or ''
    local out = {}
    local order = {}
    local results = {}
    local function add(node, line)
      local t = out[node]
      if t == nil then
        t = {}
        out[node] = t
        order[#order + 1] = node
      end
      t[#t + 1] = line
    end
    local i = 4
    for k = 1, runs do
      local ch, targets, keep, groups = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
      local count, blob = tonumber(ARGV[i + 4]), ARGV[i + 5]
      i = i + 6
      local meta = p .. 'm:' .. ch
      local last = redis.call('HINCRBY', meta, 'seq', count)
      if last == count then redis.call('HSET', meta, 'epoch', epoch) end
      if keep == '1' then record(ch, last, count, blob) end
      local nodes, picked, plain = route(targets, groups)
      local head = last .. ' ' .. count
      for _, node in ipairs(nodes) do add(node, framed(head, node, blob, picked, plain)) end
      results[2 * k - 1] = last
      results[2 * k] = #nodes
    end
    settle()
    for _, node in ipairs(order) do
      local parts = out[node]
      -- One run for a node (the common case) is published as it is, without another copy.
      if #parts == 1 then
        redis.call('PUBLISH', p .. 'n:' .. node, parts[1])
      else
        redis.call('PUBLISH', p .. 'n:' .. node, table.concat(parts))
      end
    end
    return results
    """

    /// Queue-group routing every event script shares (`p`, the prefix, must be set first).
    ///
    /// `route(targets, groups)`: the target nodes (comma-separated) get the event for their
    /// plain subscribers; for each group (`KEYLEN:PATTERN GROUP` repeated), one node from the
    /// member counts in `{p}g:PATTERN GROUP` (nodes whose liveness key is gone left out), by
    /// the group's counter `rr` turned once (slot `rr mod members`, nodes in index order, each
    /// owning as many slots as it has members). Returns the nodes in order, the groups picked
    /// per node, and which nodes are plain targets. `framed(head, node, blob, picked, plain)`
    /// is what one node gets: `HEAD[ o][ gLEN]\n` + the records + the group block.
    static let routing = #"""
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

    """#

    /// One interest change: ARGV = prefix, node, `+` or `-`, pattern. Bumps the interest
    /// version, updates the node's set and announces `+NODE VERSION PATTERN` (or `-…`) on
    /// the interest channel, all at one version. Returns the version.
    static let interest = """
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
