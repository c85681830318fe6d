/// The Lua scripts of cluster-wide locks (docs/cluster.md, "Locks"), atomic in Redis like
/// `ClusterScripts`. Redis keeps each owner's lock records in the set `{p}lk:OWNER` and each
/// node's owners in `{p}lo:NODE` (what the reaper and a joining node read).
enum ClusterLockScripts {
    /// One owner's locks taken or released: ARGV = prefix, node, op, owner, records….
    /// `L` adds the records, `U` removes them, `X` removes all of the owner's (it left).
    /// Bumps the interest version and announces `OPNODE V OWNER` followed by ` LEN:RECORD`
    /// per record on the interest channel; returns the version (the barrier waits for it).
    static let locks = ClusterNodeScripts.refuseDead("ARGV[2]") + """
    local p, node, op, owner = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
    local key = p .. 'lk:' .. owner
    local owners = p .. 'lo:' .. node
    if op == 'L' then
      for at = 5, #ARGV do redis.call('SADD', key, ARGV[at]) end
      redis.call('SADD', owners, owner)
    elseif op == 'U' then
      for at = 5, #ARGV do redis.call('SREM', key, ARGV[at]) end
      if redis.call('EXISTS', key) == 0 then redis.call('SREM', owners, owner) end
    else
      redis.call('UNLINK', key)
      redis.call('SREM', owners, owner)
    end
    local v = redis.call('INCR', p .. 'iv')
    local parts = { op .. node .. ' ' .. v .. ' ' .. owner }
    for at = 5, #ARGV do parts[#parts + 1] = ' ' .. #ARGV[at] .. ':' .. ARGV[at] end
    redis.call('PUBLISH', p .. 'interest', table.concat(parts))
    return v
    """

    /// A node's locks made exactly its own again after Redis came back: ARGV = prefix, node,
    /// then per local owner its id, its record count and its records. A change lost in
    /// flight when Redis died (an `unlock`, an owner's departure) left records Redis still
    /// has: every owner of the node not listed loses its records (`X` announced), and each
    /// listed owner's set becomes exactly its records (the difference announced as `U` and
    /// `L`). Returns how many owners were dropped.
    static let resync = """
    local p, node = ARGV[1], ARGV[2]
    local owners = p .. 'lo:' .. node
    local function announce(op, owner, records)
      local v = redis.call('INCR', p .. 'iv')
      local parts = { op .. node .. ' ' .. v .. ' ' .. owner }
      for _, record in ipairs(records) do parts[#parts + 1] = ' ' .. #record .. ':' .. record end
      redis.call('PUBLISH', p .. 'interest', table.concat(parts))
    end
    local listed = {}
    local at = 3
    while at <= #ARGV do
      local owner, count = ARGV[at], tonumber(ARGV[at + 1])
      local key = p .. 'lk:' .. owner
      listed[owner] = true
      local wanted, added, removed = {}, {}, {}
      for i = at + 2, at + 1 + count do
        wanted[ARGV[i]] = true
        if redis.call('SADD', key, ARGV[i]) == 1 then added[#added + 1] = ARGV[i] end
      end
      for _, record in ipairs(redis.call('SMEMBERS', key)) do
        if not wanted[record] then
          redis.call('SREM', key, record)
          removed[#removed + 1] = record
        end
      end
      redis.call('SADD', owners, owner)
      if #removed > 0 then announce('U', owner, removed) end
      if #added > 0 then announce('L', owner, added) end
      at = at + 2 + count
    end
    local dropped = 0
    for _, owner in ipairs(redis.call('SMEMBERS', owners)) do
      if not listed[owner] then
        redis.call('UNLINK', p .. 'lk:' .. owner)
        redis.call('SREM', owners, owner)
        announce('X', owner, {})
        dropped = dropped + 1
      end
    end
    return dropped
    """

    /// Every live node's locks at one version: ARGV = prefix. Returns {version, owner,
    /// records, owner, records, …}.
    static let snapshot = ClusterScripts.ownerSnapshot(owners: "lo:", records: "lk:", read: "SMEMBERS")
}
