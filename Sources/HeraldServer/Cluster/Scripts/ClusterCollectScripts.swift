/// The Lua scripts that collect idle channel records in Redis (issue 32, item 6; docs/cluster.md,
/// "Idle channel records"): a channel's hash `{p}m:CH` outlives its last event once its
/// history is trimmed or evicted (it keeps the channel's `seq`), so a user publishing once to
/// each of many new names would grow Redis without bound. As on one node, a channel record
/// that holds nothing is collected, and a collected channel's `seq` starts again at 1.
///
/// A record holds nothing when it has no retained state (no `k`: a value, a list or a
/// tombstone keeps it, tombstones until a cluster-wide `rev` floor exists), no history (no
/// stream, nothing charged), no instance owner and no list. The node that runs `collect`
/// also leaves out every channel some node's interest covers (its interest table mirrors
/// every node's), then `forget` deletes what still holds nothing with the same `seq`.
enum ClusterCollectScripts {
    /// One step of the collection: ARGV = prefix, period (ms), keys to look at, rest (ms).
    /// Only one node a period does it (`{p}gcl`, set for the period; for the rest when the
    /// step found less than a tenth of what it looked at to collect, so a quiet data set
    /// costs a step per rest, whatever the number of nodes); the `SCAN` cursor is kept in
    /// `{p}gcc`, so the nodes walk the key space together, a bounded step at a time.
    /// Returns `{1, CH, SEQ, CH, SEQ, …}` for the records that hold nothing, or `{0}` when
    /// the step was not this node's.
    static let collect = """
    local p = ARGV[1]
    if not redis.call('SET', p .. 'gcl', '1', 'NX', 'PX', ARGV[2]) then return {0} end
    local cursor = redis.call('GET', p .. 'gcc') or '0'
    local budget, seen, out = tonumber(ARGV[3]) or 1000, 0, {1}
    local stem = p .. 'm:'
    repeat
      local page = redis.call('SCAN', cursor, 'MATCH', stem .. '*', 'COUNT', 500)
      cursor = page[1]
      for _, key in ipairs(page[2]) do
        local ch = string.sub(key, #stem + 1)
        local st = redis.call('HMGET', key, 'k', 'cb', 'tb', 'hc', 'seq')
        if not st[1] and not st[4] and tonumber(st[2] or '0') <= tonumber(st[3] or '0')
           and redis.call('EXISTS', p .. 'h:' .. ch, p .. 'own:' .. ch, p .. 'l:' .. ch) == 0 then
          out[#out + 1] = ch
          out[#out + 1] = st[5] or '0'
        end
      end
      seen = seen + 500
    until cursor == '0' or seen >= budget
    redis.call('SET', p .. 'gcc', cursor)
    if (#out - 1) / 2 * 10 < seen then redis.call('PEXPIRE', p .. 'gcl', ARGV[4]) end
    return out
    """

    /// Deletes the records `collect` found that nobody's interest covers: ARGV = prefix,
    /// then `CH SEQ` pairs. A record is deleted only if it still holds nothing and its `seq`
    /// did not move (an event published meanwhile keeps it). Returns how many went.
    static let forget = """
    local p, gone = ARGV[1], 0
    for i = 2, #ARGV - 1, 2 do
      local ch = ARGV[i]
      local key = p .. 'm:' .. ch
      local st = redis.call('HMGET', key, 'k', 'cb', 'tb', 'hc', 'seq')
      if not st[1] and not st[4] and tonumber(st[2] or '0') <= tonumber(st[3] or '0') and (st[5] or '0') == ARGV[i + 1]
         and redis.call('EXISTS', p .. 'h:' .. ch, p .. 'own:' .. ch, p .. 'l:' .. ch) == 0 then
        redis.call('DEL', key)
        gone = gone + 1
      end
    end
    return gone
    """
}
