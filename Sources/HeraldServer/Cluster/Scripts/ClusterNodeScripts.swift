/// The Lua script that declares nodes down (docs/cluster.md, "Node liveness and the
/// reaper"), atomic in Redis like `ClusterScripts`: whichever node runs it first for a dead
/// node does the work, the others find nothing to do.
enum ClusterNodeScripts {
    /// Declares down every registered node whose liveness key is gone: ARGV = prefix, the
    /// caller's index (never reaped by itself). For each such node, in one atomic step: its
    /// entry leaves `{p}nodes` and joins `{p}dead` (so a node reaped during a partition
    /// learns it when it reconnects), its interest set and its queue-group member counts go
    /// (a group hash with only `rr` left goes too), its connections' locks go, its instance
    /// channels are handed to `ClusterInstanceScripts.reapInstances`, its links and signal
    /// handlers go, and `dNODE V` is announced on the
    /// interest channel at a new interest version. Returns `{index, name, reason, …}`,
    /// `reason` being `left` when the node left cleanly (`{p}left:INDEX`), else `timeout`.
    /// Its cost is the number of registered nodes plus the dead node's interest entries.
    static let reap = "local p, me = ARGV[1], ARGV[2]\n" + ClusterInstanceScripts.reapNode + ClusterLinkScripts.reapNode
        + ClusterHandlerScripts.reapNode + """
    local out = {}
    local nodes = redis.call('HGETALL', p .. 'nodes')
    for at = 1, #nodes, 2 do
      local node, name = nodes[at], nodes[at + 1]
      if node ~= me and redis.call('EXISTS', p .. 'alive:' .. node) == 0 then
        redis.call('HDEL', p .. 'nodes', node)
        redis.call('SADD', p .. 'dead', node)
        for _, entry in ipairs(redis.call('SMEMBERS', p .. 'i:' .. node)) do
          if string.find(entry, ' ', 1, true) then
            local gk = p .. 'g:' .. entry
            redis.call('HDEL', gk, node)
            if redis.call('HLEN', gk) == 1 and redis.call('HEXISTS', gk, 'rr') == 1 then redis.call('DEL', gk) end
          end
        end
        redis.call('DEL', p .. 'i:' .. node)
        for _, owner in ipairs(redis.call('SMEMBERS', p .. 'lo:' .. node)) do redis.call('UNLINK', p .. 'lk:' .. owner) end
        redis.call('DEL', p .. 'lo:' .. node)
        reapInstancesOf(node)
        reapLinksOf(node)
        reapHandlersOf(node)
        local reason = 'timeout'
        if redis.call('DEL', p .. 'left:' .. node) == 1 then reason = 'left' end
        local v = redis.call('INCR', p .. 'iv')
        redis.call('PUBLISH', p .. 'interest', 'd' .. node .. ' ' .. v)
        out[#out + 1] = node
        out[#out + 1] = name
        out[#out + 1] = reason
      end
    end
    return out
    """

    /// A node registering (again) after Redis came back: ARGV = prefix, index, name, the
    /// liveness TTL in ms. Returns 1 when the node had been declared down meanwhile (it is
    /// alive again: its channels not yet cleared stay its own, and it claims them again).
    static let rejoin = """
    local p, node = ARGV[1], ARGV[2]
    redis.call('SET', p .. 'alive:' .. node, '1', 'PX', ARGV[4])
    redis.call('HSET', p .. 'nodes', node, ARGV[3])
    redis.call('UNLINK', p .. 'ng:' .. node)
    redis.call('SREM', p .. 'gone', node)
    return redis.call('SREM', p .. 'dead', node)
    """
}
