/// The Lua scripts of cluster mode (docs/cluster.md), each atomic inside Redis. Loaded with
/// `SCRIPT LOAD` at connect and called with `EVALSHA`; keys are built from the prefix in
/// ARGV, so the cluster runs on one Redis (not Redis Cluster) and several clusters can share
/// one with different prefixes.
enum ClusterScripts {
    /// A batch of events, grouped by channel: ARGV = prefix, `HISTORY HISTORY_BYTES`, the
    /// number of groups, then per group its channel, target nodes (comma-separated
    /// indexes), event count and records (`ClusterRecord.encoded`, concatenated, in publish
    /// order). Per group, not per event: the channel's `seq` rises by the count in one
    /// `HINCRBY` (the meta keeps the data set's epoch on the first), the run goes to history
    /// in one entry (`ClusterStateScripts.history`), and `LAST COUNT\n` + the records is
    /// appended to each target node's message; then one `PUBLISH` per target node. Returns
    /// each group's last `seq`.
    static let publish = "local p, histcfg = ARGV[1], ARGV[2]\n" + ClusterStateScripts.history + """
    local groups = tonumber(ARGV[3])
    local epoch = redis.call('GET', p .. 'epoch') or ''
    local out = {}
    local order = {}
    local lasts = {}
    local i = 4
    for k = 1, groups do
      local ch, targets, count, blob = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3]
      i = i + 4
      local meta = p .. 'm:' .. ch
      local last = redis.call('HINCRBY', meta, 'seq', count)
      if last == count then redis.call('HSET', meta, 'epoch', epoch) end
      record(ch, last, count, blob)
      lasts[k] = last
      if targets ~= '' then
        local chunk = last .. ' ' .. count .. '\\n' .. blob
        for node in string.gmatch(targets, '[^,]+') do
          local t = out[node]
          if t == nil then
            t = {}
            out[node] = t
            order[#order + 1] = node
          end
          t[#t + 1] = chunk
        end
      end
    end
    settle()
    for _, node in ipairs(order) do
      redis.call('PUBLISH', p .. 'n:' .. node, table.concat(out[node]))
    end
    return lasts
    """

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
    static let snapshot = """
    local p = ARGV[1]
    local out = { tonumber(redis.call('GET', p .. 'iv') or '0') }
    for _, node in ipairs(redis.call('HKEYS', p .. 'nodes')) do
      if redis.call('EXISTS', p .. 'alive:' .. node) == 1 then
        out[#out + 1] = node
        out[#out + 1] = redis.call('SMEMBERS', p .. 'i:' .. node)
      end
    end
    return out
    """
}
