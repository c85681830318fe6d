/// The Lua scripts of presence across nodes (issue 36; docs/cluster.md, "Presence"):
/// `{p}pm:NODE` holds the members of that node's rosters (field `CH\nCLIENT`, value the
/// member's JSON object), so that when the node dies its members leave once: the first node
/// to take the hash publishes their leaves.
enum ClusterPresenceScripts {
    /// Records joins and leaves of one node's rosters: ARGV = prefix, targets (unused), node,
    /// then `+ FIELD VALUE` or `- FIELD` entries. A node declared down writes nothing.
    static let record = ClusterNodeScripts.refuseDead("ARGV[3]") + """
    local key = ARGV[1] .. 'pm:' .. ARGV[3]
    local at = 4
    while at <= #ARGV do
      if ARGV[at] == '+' then
        redis.call('HSET', key, ARGV[at + 1], ARGV[at + 2])
        at = at + 3
      else
        redis.call('HDEL', key, ARGV[at + 1])
        at = at + 2
      end
    end
    return 1
    """

    /// Takes a gone node's members: ARGV = prefix, targets (unused), node. Returns the
    /// hash's fields and values and deletes it, so only the first taker gets them.
    static let take = """
    local key = ARGV[1] .. 'pm:' .. ARGV[3]
    local all = redis.call('HGETALL', key)
    redis.call('DEL', key)
    return all
    """
}
