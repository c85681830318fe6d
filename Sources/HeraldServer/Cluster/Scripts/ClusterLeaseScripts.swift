/// The Lua scripts of per-user limits across the cluster (issue 32, item 7; `UserLeases`),
/// atomic in Redis like `ClusterScripts`. `{p}uq:USER` holds what all nodes were granted of
/// the user's figures (a field per kind: `c` connections, `s` subscriptions, `h` channels);
/// `{p}ul:NODE` what one node holds (field `KIND USER`). Only these scripts and the reaper
/// change them, so the first is always the sum of the second over the live nodes.
enum ClusterLeaseScripts {
    /// Grants part of a figure: ARGV = prefix, targets (unused), node, kind, user, limit,
    /// wanted. Grants at most what is left of the limit and at most half of it (at least
    /// one), so as the limit nears, nodes racing for it take ever smaller parts and little
    /// is left idle on any one. Returns `{granted, total}`; a node declared down is refused.
    static let lease = ClusterNodeScripts.refuseDead("ARGV[3]") + """
    local p, node, kind, user = ARGV[1], ARGV[3], ARGV[4], ARGV[5]
    local limit, wanted = tonumber(ARGV[6]), tonumber(ARGV[7])
    local uq = p .. 'uq:' .. user
    local total = tonumber(redis.call('HGET', uq, kind) or '0')
    local room = limit - total
    local granted = math.min(wanted, room, math.max(1, math.floor(room / 2)))
    if granted <= 0 then return {0, total} end
    redis.call('HINCRBY', uq, kind, granted)
    redis.call('HINCRBY', p .. 'ul:' .. node, kind .. ' ' .. user, granted)
    return {granted, total + granted}
    """

    /// Gives part of a grant back: ARGV = prefix, targets (unused), node, kind, user, amount
    /// (at most what the node holds). Fields that reach 0 go, so an idle user leaves no key.
    /// Returns what was given back.
    static let unlease = """
    local p, node, kind, user = ARGV[1], ARGV[3], ARGV[4], ARGV[5]
    local ul, field, uq = p .. 'ul:' .. node, kind .. ' ' .. user, p .. 'uq:' .. user
    local n = math.min(tonumber(ARGV[6]) or 0, tonumber(redis.call('HGET', ul, field) or '0'))
    if n <= 0 then return 0 end
    if redis.call('HINCRBY', ul, field, -n) <= 0 then redis.call('HDEL', ul, field) end
    if redis.call('HINCRBY', uq, kind, -n) <= 0 then redis.call('HDEL', uq, kind) end
    return n
    """

    /// A node's grants made exactly what it holds after Redis came back (a Redis restarted
    /// without its data, or a replica promoted before the last changes reached it):
    /// ARGV = prefix, node, then `kind user amount` triples. Fields Redis has for the node
    /// that are not listed go; each user's total moves by the difference. Returns the
    /// number of fields changed.
    static let resync = """
    local p, node = ARGV[1], ARGV[2]
    local ul = p .. 'ul:' .. node
    local listed, changed = {}, 0
    for at = 3, #ARGV - 2, 3 do listed[ARGV[at] .. ' ' .. ARGV[at + 1]] = tonumber(ARGV[at + 2]) end
    local held = redis.call('HGETALL', ul)
    local had = {}
    for at = 1, #held, 2 do had[held[at]] = tonumber(held[at + 1]) end
    local function move(field, by)
      if by == 0 then return end
      local kind, user = string.sub(field, 1, 1), string.sub(field, 3)
      if redis.call('HINCRBY', p .. 'uq:' .. user, kind, by) <= 0 then redis.call('HDEL', p .. 'uq:' .. user, kind) end
      changed = changed + 1
    end
    for field, n in pairs(had) do
      if listed[field] == nil then
        redis.call('HDEL', ul, field)
        move(field, -n)
      end
    end
    for field, n in pairs(listed) do
      move(field, n - (had[field] or 0))
      redis.call('HSET', ul, field, n)
    end
    return changed
    """

    /// The part of the reaper for one dead node (inside `ClusterNodeScripts.reap`): its
    /// grants go back to their users' totals. Costs the figures it held.
    static let reapNode = """
    local function reapLeasesOf(node)
      local ul = p .. 'ul:' .. node
      local held = redis.call('HGETALL', ul)
      for at = 1, #held, 2 do
        local field = held[at]
        local kind, user = string.sub(field, 1, 1), string.sub(field, 3)
        local uq = p .. 'uq:' .. user
        if redis.call('HINCRBY', uq, kind, -tonumber(held[at + 1])) <= 0 then redis.call('HDEL', uq, kind) end
      end
      redis.call('DEL', ul)
    end

    """
}
