/// The Lua script of queue-group membership (docs/cluster.md, "Queue groups"), atomic in
/// Redis like `ClusterScripts`.
enum ClusterGroupScripts {
    /// A group's membership on one node: ARGV = prefix, node, op, pattern, group, members.
    /// The group's hash `{p}g:PATTERN GROUP` holds each node's member count (what the
    /// publish script picks from) and the counter `rr`.
    ///
    /// - `+`: the group is new on the node (or registered again): the entry `PATTERN GROUP`
    ///   joins the node's interest set, its count is written, and `+NODE V PATTERN GROUP`
    ///   is announced at a new interest version, which is returned (the barrier waits for it);
    /// - `=`: only the count changes (members came or went, some stay): no version, no
    ///   announcement (the other nodes route by presence; counts are read here); returns 0;
    /// - `-`: the last member left: the entry and count go (the hash too once only `rr` is
    ///   left), announced as `-NODE V PATTERN GROUP`; returns the version.
    static let groupInterest = ClusterNodeScripts.refuseDead("ARGV[2]") + """
    local p, node, op = ARGV[1], ARGV[2], ARGV[3]
    local entry = ARGV[4] .. ' ' .. ARGV[5]
    local gk = p .. 'g:' .. entry
    if op == '=' then
      redis.call('HSET', gk, node, ARGV[6])
      return 0
    end
    local v = redis.call('INCR', p .. 'iv')
    if op == '+' then
      redis.call('SADD', p .. 'i:' .. node, entry)
      redis.call('HSET', gk, node, ARGV[6])
    else
      redis.call('SREM', p .. 'i:' .. node, entry)
      redis.call('HDEL', gk, node)
      local left = redis.call('HLEN', gk)
      if left == 1 and redis.call('HEXISTS', gk, 'rr') == 1 then redis.call('DEL', gk) end
    end
    redis.call('PUBLISH', p .. 'interest', op .. node .. ' ' .. v .. ' ' .. entry)
    return v
    """

    /// A node's member count of a group, copied to a data shard (issue 33): ARGV = prefix,
    /// node, op (`+` or `=` writes the count, `-` removes it), pattern, group, members. The
    /// shard's publish and state scripts pick members from it as shard 0's do; no version,
    /// no announcement (interest lives on shard 0).
    static let groupLayout = """
    local p, node, op = ARGV[1], ARGV[2], ARGV[3]
    local gk = p .. 'g:' .. ARGV[4] .. ' ' .. ARGV[5]
    if op == '-' then
      redis.call('HDEL', gk, node)
      if redis.call('HLEN', gk) == 1 and redis.call('HEXISTS', gk, 'rr') == 1 then redis.call('DEL', gk) end
    else
      redis.call('HSET', gk, node, ARGV[6])
    end
    return 0
    """
}
