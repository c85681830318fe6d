/// The Lua scripts of instance channels across nodes (docs/cluster.md, "Instance
/// channels"), atomic in Redis like `ClusterScripts`.
///
/// Keys: `{p}own:CH` the owner's global connection id; `{p}no:NODE` the channels owned by
/// that node's connections (what the reaper takes over); `{p}ng:NODE` the channels of a
/// node declared down, still to clear, and `{p}gone` those nodes. A removal is announced on
/// the interest channel as `ROWNER REASON CH CH…`, which every node reads.
enum ClusterInstanceScripts {
    /// Clearing a channel's life (`p` must be set first): its retained state (and the
    /// retained-byte counts it was charged to), its history (and the data set's history
    /// bytes: what its hash's `cb` counts less its `tb`), its `seq`. A channel declared again starts at `seq` 1, as on one node.
    static let clear = """
    local function clear(ch)
      local meta = p .. 'm:' .. ch
      local st = redis.call('HMGET', meta, 'k', 'c', 'u', 'cb', 'tb', 'hc', 'hu')
      if st[1] == 'v' or st[1] == 'l' then
        local bytes = #ch + tonumber(st[2] or '0')
        redis.call('DECRBY', p .. 'rb', bytes)
        if st[3] and st[3] ~= '' then redis.call('DECRBY', p .. 'ub:' .. st[3], bytes) end
      end
      redis.call('ZREM', p .. 'sk', ch)
      local hb = tonumber(st[4] or '0') - tonumber(st[5] or '0')
      -- A stream's own memory was counted when it was made (ClusterHistoryScripts); what
      -- the user charged for it was charged (`settle`) goes from the user's count.
      if redis.call('EXISTS', p .. 'h:' .. ch) == 1 then hb = hb + \(ClusterHistoryScripts.streamOverheadBytes) end
      if st[6] and st[7] then
        local left = tonumber(st[6]) - tonumber(st[5] or '0') + \(ClusterHistoryScripts.streamOverheadBytes)
        redis.call('HINCRBY', p .. 'uh', st[7], -left)
        redis.call('ZREM', p .. 'ui:' .. st[7], ch)
      end
      if hb > 0 then redis.call('DECRBY', p .. 'hb', hb) end
      redis.call('ZREM', p .. 'hi', ch)
      redis.call('UNLINK', meta, p .. 'l:' .. ch, p .. 'h:' .. ch)
    end

    """

    /// Clearing a node's channel owned by `owner` and noting it for one `R` announcement per
    /// owner (`announceRemovals`, reason `disconnect`): the dead-node reaper and the resync
    /// after an outage share it (`p` set first, `clear` included before).
    static let removeForOwner = """
    local byOwner, owners = {}, {}
    local function removeForOwner(owner, ch)
      redis.call('DEL', p .. 'own:' .. ch)
      clear(ch)
      if byOwner[owner] == nil then
        byOwner[owner] = {}
        owners[#owners + 1] = owner
      end
      local list = byOwner[owner]
      list[#list + 1] = ch
    end
    local function announceRemovals()
      for _, owner in ipairs(owners) do
        redis.call('PUBLISH', p .. 'interest', 'R' .. owner .. ' disconnect ' .. table.concat(byOwner[owner], ' '))
      end
    end

    """

    /// Clears removed instance channels on a data shard (issue 33): ARGV = prefix,
    /// channels…; shard 0's removal scripts cleared their own and announced them all.
    static let clearOnShard = "local p = ARGV[1]\n" + clear + """
    for at = 2, #ARGV do clear(ARGV[at]) end
    return #ARGV - 1
    """

    /// Claims channels for an owner: ARGV = prefix, targets (unused), node, owner, channels….
    /// A channel nobody owns becomes the owner's; one it owns already stays so. With one
    /// channel, returns `{0}` or `{1, OWNER}` when another owner holds it; with several
    /// (claiming again after Redis came back) the held ones are skipped and `{0}` returned.
    static let declare = ClusterNodeScripts.refuseDead("ARGV[3]") + """
    local p, node, owner = ARGV[1], ARGV[3], ARGV[4]
    for at = 5, #ARGV do
      local key = p .. 'own:' .. ARGV[at]
      local held = redis.call('GET', key)
      if held and held ~= owner then
        if #ARGV == 5 then return {1, held} end
      else
        redis.call('SET', key, owner)
        redis.call('SADD', p .. 'no:' .. node, ARGV[at])
      end
    end
    return {0}
    """

    /// Removes an owner's channels: ARGV = prefix, targets (unused), node, owner, reason,
    /// channels…. Each channel the owner still holds is cleared; those are announced in one
    /// `R` message. Returns how many were removed.
    static let undeclare = "local p = ARGV[1]\n" + clear + """
    local node, owner, reason = ARGV[3], ARGV[4], ARGV[5]
    local names = {}
    for at = 6, #ARGV do
      local ch = ARGV[at]
      if redis.call('GET', p .. 'own:' .. ch) == owner then
        redis.call('DEL', p .. 'own:' .. ch)
        redis.call('SREM', p .. 'no:' .. node, ch)
        clear(ch)
        names[#names + 1] = ch
      end
    end
    if #names > 0 then
      redis.call('PUBLISH', p .. 'interest', 'R' .. owner .. ' ' .. reason .. ' ' .. table.concat(names, ' '))
    end
    return #names
    """

    /// A node's channels made exactly its own again after Redis came back: ARGV = prefix,
    /// node, then `channel owner` pairs of the channels this node's connections hold. A
    /// removal lost in flight (acknowledged by a primary that died before its replica had
    /// it) left an owner Redis still names: every channel Redis has for the node that is not
    /// listed is cleared and announced (reason `disconnect`); the listed ones are then
    /// claimed again by `declare` calls. Returns how many were cleared.
    static let resync = "local p, node = ARGV[1], ARGV[2]\n" + clear + removeForOwner + """
    local set = p .. 'no:' .. node
    local listed = {}
    for at = 3, #ARGV - 1, 2 do listed[ARGV[at]] = ARGV[at + 1] end
    local dropped = 0
    for _, ch in ipairs(redis.call('SMEMBERS', set)) do
      local owner = redis.call('GET', p .. 'own:' .. ch)
      if listed[ch] == nil or listed[ch] ~= owner then
        redis.call('SREM', set, ch)
        if owner and math.floor(tonumber(owner) / 4294967296) == tonumber(node) then
          removeForOwner(owner, ch)
          dropped = dropped + 1
        end
      end
    end
    announceRemovals()
    return dropped
    """

    /// The dead nodes' channels, a slice at a time: ARGV = prefix, budget. Clears up to
    /// `budget` channels of the nodes in `{p}gone` (those still owned by a connection of that
    /// node), announcing them per owner with reason `disconnect`. Returns 1 when channels
    /// may be left (call again), else 0.
    static let reapInstances = "local p = ARGV[1]\n" + clear + removeForOwner + """
    local budget, done = tonumber(ARGV[2]), 0
    for _, node in ipairs(redis.call('SMEMBERS', p .. 'gone')) do
      local key = p .. 'ng:' .. node
      while done < budget do
        local ch = redis.call('SPOP', key)
        if not ch then break end
        done = done + 1
        local owner = redis.call('GET', p .. 'own:' .. ch)
        if owner and math.floor(tonumber(owner) / 4294967296) == tonumber(node) then removeForOwner(owner, ch) end
      end
      if redis.call('EXISTS', key) == 0 then redis.call('SREM', p .. 'gone', node) end
      if done >= budget then break end
    end
    announceRemovals()
    if done >= budget then return 1 end
    return 0
    """

    /// The part of the reaper for one dead node `node` (inside `ClusterNodeScripts.reap`):
    /// its channels move to the set the `reapInstances` slices clear.
    static let reapNode = """
    local function reapInstancesOf(node)
      local owned = p .. 'no:' .. node
      if redis.call('EXISTS', owned) == 1 then
        redis.call('SUNIONSTORE', p .. 'ng:' .. node, p .. 'ng:' .. node, owned)
        redis.call('DEL', owned)
        redis.call('SADD', p .. 'gone', node)
      end
    end

    """
}
