/// The Lua script that declares nodes down (docs/cluster.md, "Node liveness and the
/// reaper"), atomic in Redis like `ClusterScripts`: whichever node runs it first for a dead
/// node does the work, the others find nothing to do.
enum ClusterNodeScripts {
    /// Declares down every registered node whose liveness key is gone: ARGV = prefix, the
    /// caller's index (never reaped by itself). For each such node, in one atomic step: its
    /// entry leaves `{p}nodes` and joins `{p}dead` (so a node reaped during a partition
    /// learns it when it reconnects), its interest set and its queue-group member counts go
    /// (a group hash with only `rr` left goes too), its connections' locks go, its instance
    /// channels are handed to `ClusterInstanceScripts.reapInstances`, its links, signal
    /// handlers and grants of per-user limits go, and `dNODE V` is announced on the
    /// interest channel at a new interest version. Returns `{{index, name, reason, …}, {stale…}}`,
    /// `reason` being `left` when the node left cleanly (`{p}left:INDEX`), else `timeout`;
    /// `stale` lists the live nodes whose liveness key has less than `ARGV[3]` ms left (not
    /// refreshed for two periods: a held answer does not wait for them).
    /// Its cost is the number of registered nodes plus the dead node's interest entries.
    static let reap = "local p, me = ARGV[1], ARGV[2]\n" + ClusterInstanceScripts.reapNode + ClusterLinkScripts.reapNode
        + ClusterHandlerScripts.reapNode + ClusterLeaseScripts.reapNode + """
    local out, stale = {}, {}
    local fresh = tonumber(ARGV[3]) or 0
    local nodes = redis.call('HGETALL', p .. 'nodes')
    for at = 1, #nodes, 2 do
      local node, name = nodes[at], nodes[at + 1]
      local ttl = -2
      if node ~= me then ttl = redis.call('PTTL', p .. 'alive:' .. node) end
      if node ~= me and ttl >= 0 and ttl < fresh then stale[#stale + 1] = node end
      if node ~= me and ttl == -2 then
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
        reapLeasesOf(node)
        local reason = 'timeout'
        if redis.call('DEL', p .. 'left:' .. node) == 1 then reason = 'left' end
        local v = redis.call('INCR', p .. 'iv')
        redis.call('PUBLISH', p .. 'interest', 'd' .. node .. ' ' .. v)
        out[#out + 1] = node
        out[#out + 1] = name
        out[#out + 1] = reason
      end
    end
    return {out, stale}
    """

    /// A node registering again after Redis came back: ARGV = prefix, index, name, the
    /// liveness TTL in ms. Returns 1, registering nothing, when the reaper declared the node
    /// down meanwhile (its index stays dead: the node starts a new incarnation); else 0.
    static let rejoin = """
    local p, node = ARGV[1], ARGV[2]
    if redis.call('SISMEMBER', p .. 'dead', node) == 1 then return 1 end
    redis.call('SET', p .. 'alive:' .. node, '1', 'PX', ARGV[4])
    redis.call('HSET', p .. 'nodes', node, ARGV[3])
    redis.call('UNLINK', p .. 'ng:' .. node)
    redis.call('SREM', p .. 'gone', node)
    return 0
    """

    /// The first lines of every script that makes something a node owns (interest, locks,
    /// links, handlers, instance owners): a node the reaper declared down (its index in
    /// `{p}dead`) is refused with `DEAD INDEX`, so a late write of an earlier incarnation
    /// (a delayed link, a paused process) never revives what the reaper released.
    /// - Parameter node: the Lua expression naming the node (the prefix is `ARGV[1]`).
    static func refuseDead(_ node: String) -> String {
        "if redis.call('SISMEMBER', ARGV[1] .. 'dead', \(node)) == 1 then "
            + "return redis.error_reply('DEAD ' .. \(node) .. ' this node was declared down') end\n"
    }
}
