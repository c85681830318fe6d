/// History in Redis (docs/cluster.md, "`seq`, history, `since`"): the Lua every event script
/// shares to keep a run, and the `settle` script that holds the data set to `history_bytes`.
///
/// Layout: `{p}h:CH` is a stream of *runs* (the events of one channel in one script call),
/// each entry `r` = `LAST COUNT\nRECORDS`, the very message the nodes were sent, under the id
/// `LAST-CUM`: the run's last `seq`, and the channel's history bytes ever kept up to and with
/// this run (records plus 40 per event, as on one node). The channel's hash `{p}m:CH` holds
/// `cb` (that running total) and `tb` (the part of it already dropped), so what a channel
/// holds is `cb - tb`, exact, without reading a run: reading one costs a script about 10,000
/// instructions inside Redis (the reply is made as RESP, then parsed into Lua), a publish's
/// whole budget being a few times that. `{p}hb` counts the data set's history bytes, `{p}hi`
/// ranks the channels holding history for eviction (`{p}hs` hands out the ranks).
///
/// What a publish pays beyond its `seq`: one `HINCRBY` of `cb` and one `XADD`. The rest is
/// amortised:
/// - a channel is trimmed back to `history` only when its `seq` crosses a multiple of a
///   quarter of it (`ClusterScriptParameters.trimStep`): one `HGET` of a note made a few
///   steps before (`keep`), one `XTRIM MINID`, one `HSET`, one `DECRBY` of `{p}hb`, for
///   that many events;
/// - bytes are added to `{p}hb` by the node, which calls `settle` each time it has kept
///   `settleBytes`; `settle` evicts while the data set is over `history_bytes`.
enum ClusterHistoryScripts {
    /// Lua that keeps a run: appends a run of `n` events ending at `last` (its message
    /// `msg`, its `bytes`, `cum` the channel's `cb` with it) to the history of channel `ch`
    /// (hash key `mk`), and trims the history back to `history` when `last` crossed a trim
    /// step. The names are the caller's Lua expressions (locals, best: each is read more than
    /// once); the prelude of `ClusterScriptParameters` comes first. Written inline (a `do`
    /// block), not as a Lua function: making a closure costs every call about 2,500
    /// instructions inside Redis, this one having many upvalues.
    ///
    /// The trim reads nothing from the stream: at each step crossing the run's id with the
    /// channel's total *before* it (`LAST-CUMBEFORE`) is noted in the channel's hash, in a
    /// ring of `RING` slots (`t0`, `t1`, …); the crossing `RING - 1` steps later trims to the
    /// note (`XTRIM MINID` keeps that run and everything after it: at least `history` events)
    /// and counts off `CUMBEFORE - tb` bytes. A run that crosses several steps writes one
    /// slot; a slot not rewritten holds an older note, which trims less (never more).
    static func keep(ch: String, mk: String, last: String, n: String, msg: String, cum: String, bytes: String) -> String {
        """
        do
          local hk = H .. \(ch)
          local id = f('%d-%d', \(last), \(cum))
          -- A channel's first run makes its stream; later ones must not, so a stream that
          -- is gone (its runs all evicted) is seen, and ranked again.
          local added = false
          if \(last) ~= \(n) then added = redis.pcall('XADD', hk, 'NOMKSTREAM', id, 'r', \(msg)) end
          if not added then
            -- No stream: a channel new to history, or one whose runs were all evicted.
            added = redis.pcall('XADD', hk, id, 'r', \(msg))
            if type(added) ~= 'table' then
              redis.call('ZADD', HI, redis.call('INCR', HS), \(ch))
              -- A new stream's own memory counts against history_bytes (`streamOverheadBytes`).
              redis.call('INCRBY', HB, OVER)
            end
          elseif type(added) ~= 'table' then
            -- (An error: an id at or below the stream's last, a data set restored from an
            -- older copy; the run is not kept, as with history 0.)
            local step = math.floor(\(last) / STEP)
            if math.floor((\(last) - \(n)) / STEP) ~= step then
              local note = f('%d-%d', \(last), \(cum) - \(bytes))
              local slot = 't' .. (step % RING)
              local old = redis.call('HGET', \(mk), 't' .. ((step + 1) % RING))
              local before, base, st = 0, 0, nil
              if old then
                before = tonumber(string.match(old, '%-(%d+)$')) or 0
                st = redis.call('HMGET', \(mk), 'tb', 'hc', 'hu')
                base = tonumber(st[1] or '0')
              end
              if before > base then
                redis.call('XTRIM', hk, 'MINID', old)
                redis.call('HSET', \(mk), slot, note, 'tb', f('%d', before))
                redis.call('DECRBY', HB, f('%d', before - base))
                -- The user charged for the channel's history is credited what left it.
                if st[2] and st[3] then redis.call('HINCRBY', p .. 'uh', st[3], f('%d', base - before)) end
              else
                redis.call('HSET', \(mk), slot, note)
              end
            end
          end
        end

        """
    }

    /// Bytes charged for each history stream beyond what its runs count: Redis 7 gives a
    /// new stream's first listpack `stream-node-max-bytes` (4,096 by default) at once, and
    /// its key, its rank entries and its channel hash's fields take about 256 more
    /// (measured: 2,000 streams of one 250-byte run took 4,349 B each). Counted in `{p}hb`
    /// and in the charged user's `{p}uh` while the stream exists, so `history_bytes` bounds
    /// what history really takes in Redis, not a fraction of it.
    static let streamOverheadBytes = 4_352

    /// The data set's history bytes and the users charged for them: ARGV = the bytes this
    /// node kept since it last called, then groups `USER LIMIT COUNT CH…` (auth on only):
    /// the channels it kept history on, by the user whose publish did.
    ///
    /// Per channel holding history, the user charged (`hu` in its hash, the first user
    /// listed for it, kept while its stream exists) is charged what the channel kept since
    /// the last charge (`cb` less `hc`, the mark of what was charged; the first time, what it
    /// holds, `cb - tb`, and the stream's overhead, which `{p}hb` counted when `keep` made
    /// the stream). Trims and
    /// evictions credit the user what they take, so the user's `{p}uh` is the sum over its
    /// channels of `hc - tb` plus the overheads, exact once every node has settled. Each
    /// user charged here whose total passes its `history_bytes` (`{p}uhl`, as the node
    /// last said) loses runs, oldest first, from its channels in turn (`{p}ui:USER`, ranked
    /// as `{p}hi` is); then, while the data set is over `history_bytes`, the channel ranked
    /// first in `{p}hi` loses its oldest run and goes to the back of the ranking, or leaves
    /// it with its last run. Returns the bytes now counted.
    static func settle(_ parameters: ClusterScriptParameters) -> String {
        parameters.prelude + #"""
        local UH, UHL, UI = \#(parameters.key("uh")), \#(parameters.key("uhl")), \#(parameters.key("ui:"))
        local total = redis.call('INCRBY', HB, ARGV[1])
        -- (A data set from before streams were counted with their overhead gives it back
        -- when they go: never below zero.)
        if total < 0 then
          redis.call('SET', HB, '0')
          total = 0
        end
        local charged, users = {}, {}
        local i = 2
        while i + 2 <= #ARGV do
          local user, limit, count = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]) or 0
          i = i + 3
          if user ~= '' then redis.call('HSET', UHL, user, limit) end
          for j = i, math.min(i + count - 1, #ARGV) do
            local ch = ARGV[j]
            local mk = M .. ch
            local st = redis.call('HMGET', mk, 'cb', 'tb', 'hc', 'hu')
            local cb, tb = tonumber(st[1] or '0'), tonumber(st[2] or '0')
            if cb > tb then
              local hu, charge = st[4], 0
              if not st[3] then
                if not hu then hu = user end
                charge = cb - tb + OVER
                if hu then
                  redis.call('HSET', mk, 'hc', f('%d', cb), 'hu', hu)
                  redis.call('ZADD', UI .. hu, redis.call('INCR', HS), ch)
                else
                  redis.call('HSET', mk, 'hc', f('%d', cb))
                end
              else
                charge = cb - tonumber(st[3])
                if charge ~= 0 then redis.call('HSET', mk, 'hc', f('%d', cb)) end
              end
              if hu and charge ~= 0 then
                redis.call('HINCRBY', UH, hu, f('%d', charge))
                if not charged[hu] then
                  charged[hu] = true
                  users[#users + 1] = hu
                end
              end
            end
          end
          i = i + count
        end
        -- The oldest run of `ch` leaves its history; its bytes are credited to the data set
        -- and to the user charged, and a stream left empty goes with its overhead (and out
        -- of `owner`'s ranking, which listed it, whatever its hash still says).
        local function evictOldest(ch, owner)
          local hk, mk = H .. ch, M .. ch
          local oldest = redis.call('XRANGE', hk, '-', '+', 'COUNT', 1)[1]
          local st = redis.call('HMGET', mk, 'tb', 'hc', 'hu')
          local hu = st[3]
          if oldest then
            redis.call('XDEL', hk, oldest[1])
            local upto = tonumber(string.match(oldest[1], '%-(%d+)$')) or 0
            local base = tonumber(st[1] or '0')
            if upto > base then
              redis.call('HSET', mk, 'tb', f('%d', upto))
              total = redis.call('DECRBY', HB, f('%d', upto - base))
              if st[2] and hu then redis.call('HINCRBY', UH, hu, f('%d', base - upto)) end
              st[1] = f('%d', upto)
            end
          end
          if oldest and redis.call('XLEN', hk) > 0 then
            local rank = redis.call('INCR', HS)
            redis.call('ZADD', HI, rank, ch)
            if st[2] and hu then redis.call('ZADD', UI .. hu, rank, ch) end
            return
          end
          redis.call('DEL', hk)
          redis.call('ZREM', HI, ch)
          if owner and owner ~= hu then redis.call('ZREM', UI .. owner, ch) end
          if oldest then total = redis.call('DECRBY', HB, OVER) end
          if st[2] then
            if hu then
              local left = tonumber(st[2]) - tonumber(st[1] or '0') + OVER
              redis.call('HINCRBY', UH, hu, f('%d', -left))
              redis.call('ZREM', UI .. hu, ch)
            end
            redis.call('HDEL', mk, 'hc', 'hu')
          end
        end
        for _, hu in ipairs(users) do
          local limit = tonumber(redis.call('HGET', UHL, hu) or '0') or 0
          if limit > 0 then
            local guard = 0
            while tonumber(redis.call('HGET', UH, hu) or '0') > limit and guard < 100000 do
              local ch = redis.call('ZRANGE', UI .. hu, 0, 0)[1]
              if ch == nil then break end
              evictOldest(ch, hu)
              guard = guard + 1
            end
          end
        end
        while total > HBYTES do
          local ch = redis.call('ZRANGE', HI, 0, 0)[1]
          if ch == nil then break end
          evictOldest(ch, nil)
        end
        return total
        """#
    }
}
