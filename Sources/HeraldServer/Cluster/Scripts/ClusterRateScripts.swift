/// The Lua script of rate limits across the cluster (issue 37, item 3; docs/cluster.md,
/// "Rate limits across nodes"): each node says once a second how many connections each
/// rate-limited user has on it, and hears the user's total, so that each node runs the
/// user's buckets at `figure × local / total`. `{p}rs:USER` holds one field per node,
/// `COUNT EXPIRES` (Redis's own clock, ms): a node that stops saying (it died) drops out of
/// the total within `rateShareTTLMs`, without the reaper.
enum ClusterRateScripts {
    /// How long a node's count stands without being said again (ms).
    static let rateShareTTLMs = 3_000

    /// ARGV = prefix, targets (unused), node, then `USER COUNT` pairs. A count of 0 removes
    /// the node's field. Returns each user's total over the nodes whose fields stand, in
    /// the order given.
    static let share = """
    local p, node = ARGV[1], ARGV[3]
    local clock = redis.call('TIME')
    local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
    local totals = {}
    for i = 4, #ARGV - 1, 2 do
      local key = p .. 'rs:' .. ARGV[i]
      if ARGV[i + 1] == '0' then
        redis.call('HDEL', key, node)
      else
        redis.call('HSET', key, node, ARGV[i + 1] .. ' ' .. (now + \(rateShareTTLMs)))
      end
      local total = 0
      local fields = redis.call('HGETALL', key)
      for j = 1, #fields - 1, 2 do
        local value = fields[j + 1]
        local space = string.find(value, ' ', 1, true)
        if space == nil or tonumber(string.sub(value, space + 1)) < now then
          redis.call('HDEL', key, fields[j])
        else
          total = total + tonumber(string.sub(value, 1, space - 1))
        end
      end
      if total > 0 then redis.call('PEXPIRE', key, \(rateShareTTLMs)) end
      totals[#totals + 1] = total
    end
    return totals
    """
}
