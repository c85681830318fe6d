/// The Lua scripts of links across nodes (docs/cluster.md, "Signals and links"), atomic in
/// Redis like `ClusterScripts`. Links live in the hash `{p}links` (channel → `PARENT OWNER`)
/// and each node's linked channels in the set `{p}nk:NODE` (what the reaper reads). Changes
/// are announced on the interest channel at a new interest version: `KNODE V OWNER CH PARENT`
/// for a link set, `kNODE V OWNER CH CH…` for links removed.
enum ClusterLinkScripts {
    /// Sets a link: ARGV = prefix, targets (unused), node, owner, channel, parent. Refuses
    /// `conflict` when another owner linked the channel, and `cycle` when the route from
    /// `parent` (links first, else the name minus its last segment) reaches the channel.
    /// Returns `{0, VERSION}` or `{1, CODE, MESSAGE}`.
    static let link = ClusterNodeScripts.refuseDead("ARGV[3]") + """
    local p, node, owner, ch, parent = ARGV[1], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
    local key = p .. 'links'
    local held = redis.call('HGET', key, ch)
    if held and string.match(held, ' (%S+)$') ~= owner then
      return {1, 'conflict', 'channel is linked by another connection'}
    end
    local level, steps = parent, 0
    while level and steps < 1000 do
      if level == ch then return {1, 'cycle', 'linking here would make the route of signals loop'} end
      local link = redis.call('HGET', key, level)
      if link then
        level = string.match(link, '^(%S+) ')
      else
        local dot = string.find(level, '%.[^%.]*$')
        if dot then level = string.sub(level, 1, dot - 1) else level = nil end
      end
      steps = steps + 1
    end
    redis.call('HSET', key, ch, parent .. ' ' .. owner)
    redis.call('SADD', p .. 'nk:' .. node, ch)
    local v = redis.call('INCR', p .. 'iv')
    redis.call('PUBLISH', p .. 'interest', 'K' .. node .. ' ' .. v .. ' ' .. owner .. ' ' .. ch .. ' ' .. parent)
    return {0, v}
    """

    /// Removes an owner's links: ARGV = prefix, targets (unused), node, owner, channels….
    /// Channels linked by another owner (or not at all) are left alone. Returns `{0, VERSION}`.
    static let unlink = """
    local p, node, owner = ARGV[1], ARGV[3], ARGV[4]
    local key = p .. 'links'
    local names = {}
    for at = 5, #ARGV do
      local held = redis.call('HGET', key, ARGV[at])
      if held and string.match(held, ' (%S+)$') == owner then
        redis.call('HDEL', key, ARGV[at])
        redis.call('SREM', p .. 'nk:' .. node, ARGV[at])
        names[#names + 1] = ARGV[at]
      end
    end
    local v = redis.call('INCR', p .. 'iv')
    if #names > 0 then
      redis.call('PUBLISH', p .. 'interest', 'k' .. node .. ' ' .. v .. ' ' .. owner .. ' ' .. table.concat(names, ' '))
    end
    return {0, v}
    """

    /// A node's links made exactly its own again after Redis came back: ARGV = prefix, node,
    /// then `channel owner` pairs of the links this node holds. Every link Redis has for the
    /// node that is not listed (an `unlink` or a departure lost in flight when Redis died)
    /// goes and is announced; the listed ones are then set again by `link` calls. Returns
    /// how many went.
    static let resync = """
    local p, node = ARGV[1], ARGV[2]
    local key, set = p .. 'links', p .. 'nk:' .. node
    local listed = {}
    for at = 3, #ARGV, 2 do listed[ARGV[at]] = ARGV[at + 1] end
    local dropped = 0
    for _, ch in ipairs(redis.call('SMEMBERS', set)) do
      local held = redis.call('HGET', key, ch)
      local owner = held and string.match(held, ' (%S+)$')
      if listed[ch] == nil or listed[ch] ~= owner then
        redis.call('SREM', set, ch)
        if owner and math.floor(tonumber(owner) / 4294967296) == tonumber(node) then
          redis.call('HDEL', key, ch)
          local v = redis.call('INCR', p .. 'iv')
          redis.call('PUBLISH', p .. 'interest', 'k' .. node .. ' ' .. v .. ' ' .. owner .. ' ' .. ch)
          dropped = dropped + 1
        end
      end
    end
    return dropped
    """

    /// Every live node's links at one version: ARGV = prefix. Returns `{version, owner,
    /// channel, parent, …}`.
    static let snapshot = ClusterScripts.liveNodes + """
    for _, node in ipairs(live) do
      for _, ch in ipairs(redis.call('SMEMBERS', p .. 'nk:' .. node)) do
        local held = redis.call('HGET', p .. 'links', ch)
        if held then
          local parent, owner = string.match(held, '^(%S+) (%S+)$')
          out[#out + 1] = owner
          out[#out + 1] = ch
          out[#out + 1] = parent
        end
      end
    end
    return out
    """

    /// The part of the reaper for one dead node (inside `ClusterNodeScripts.reap`): its
    /// connections' links go. Costs that node's links.
    static let reapNode = """
    local function reapLinksOf(node)
      for _, ch in ipairs(redis.call('SMEMBERS', p .. 'nk:' .. node)) do
        local held = redis.call('HGET', p .. 'links', ch)
        local owner = held and string.match(held, ' (%S+)$')
        if owner and math.floor(tonumber(owner) / 4294967296) == tonumber(node) then
          redis.call('HDEL', p .. 'links', ch)
        end
      end
      redis.call('DEL', p .. 'nk:' .. node)
    end

    """
}
