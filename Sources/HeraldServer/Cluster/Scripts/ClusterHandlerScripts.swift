/// The Lua scripts of the cluster's signal handler registry (docs/cluster.md, "Signals and
/// links"), atomic in Redis like `ClusterScripts`. Each connection's handlers live in the
/// hash `{p}hk:OWNER` (name → `SCORE PATTERN`), each node's owners in the set `{p}ho:NODE`
/// (what the reaper and a snapshot read), and `{p}hseq` hands out scores, the cluster's
/// registration order. Changes are announced on the interest channel at a new interest
/// version: `HOPNODE V OWNER` followed by ` SCORE PATTERN LEN:NAME` per handler (`A` added,
/// `S` the owner's exactly these) or ` LEN:NAME` per name (`R` removed); `X` (all of the
/// owner's gone) carries nothing.
enum ClusterHandlerScripts {
    /// One owner's handlers changed: ARGV = prefix, node, op, owner, then for `A` and `S`
    /// `name pattern score` triples (score 0: a new one from `{p}hseq`; a known score keeps
    /// its place and `{p}hseq` stays above it), for `R` names. Returns the version.
    static let handlers = ClusterNodeScripts.refuseDead("ARGV[2]") + """
    local p, node, op, owner = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
    local key, owners = p .. 'hk:' .. owner, p .. 'ho:' .. node
    local parts = { 'H' .. op .. node .. ' ' }
    if op == 'X' then
      redis.call('UNLINK', key)
    elseif op == 'R' then
      for at = 5, #ARGV do
        redis.call('HDEL', key, ARGV[at])
        parts[#parts + 1] = ' ' .. #ARGV[at] .. ':' .. ARGV[at]
      end
    else
      if op == 'S' then redis.call('UNLINK', key) end
      for at = 5, #ARGV - 2, 3 do
        local name, pattern, score = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2])
        if score == 0 then
          score = redis.call('INCR', p .. 'hseq')
        elseif score > tonumber(redis.call('GET', p .. 'hseq') or '0') then
          redis.call('SET', p .. 'hseq', score)
        end
        redis.call('HSET', key, name, score .. ' ' .. pattern)
        parts[#parts + 1] = ' ' .. score .. ' ' .. pattern .. ' ' .. #name .. ':' .. name
      end
    end
    if redis.call('EXISTS', key) == 1 then redis.call('SADD', owners, owner) else redis.call('SREM', owners, owner) end
    local v = redis.call('INCR', p .. 'iv')
    parts[1] = parts[1] .. v .. ' ' .. owner
    redis.call('PUBLISH', p .. 'interest', table.concat(parts))
    return v
    """

    /// After Redis came back: every owner of the node not listed (ARGV = prefix, node,
    /// owners…) loses its handlers (a departure lost in flight), announced as `X`; the
    /// listed ones are then set exactly with `S` calls. Returns how many owners went.
    static let resync = """
    local p, node = ARGV[1], ARGV[2]
    local owners = p .. 'ho:' .. node
    local listed = {}
    for at = 3, #ARGV do listed[ARGV[at]] = true end
    local dropped = 0
    for _, owner in ipairs(redis.call('SMEMBERS', owners)) do
      if not listed[owner] then
        redis.call('UNLINK', p .. 'hk:' .. owner)
        redis.call('SREM', owners, owner)
        local v = redis.call('INCR', p .. 'iv')
        redis.call('PUBLISH', p .. 'interest', 'HX' .. node .. ' ' .. v .. ' ' .. owner)
        dropped = dropped + 1
      end
    end
    return dropped
    """

    /// Every live node's handlers at one version: ARGV = prefix. Returns `{version, owner,
    /// {name, SCORE PATTERN, …}, …}`.
    static let snapshot = ClusterScripts.ownerSnapshot(owners: "ho:", records: "hk:", read: "HGETALL")

    /// The part of the reaper for one dead node (inside `ClusterNodeScripts.reap`): its
    /// connections' handlers go. Costs that node's owners.
    static let reapNode = """
    local function reapHandlersOf(node)
      for _, owner in ipairs(redis.call('SMEMBERS', p .. 'ho:' .. node)) do redis.call('UNLINK', p .. 'hk:' .. owner) end
      redis.call('DEL', p .. 'ho:' .. node)
    end

    """
}
