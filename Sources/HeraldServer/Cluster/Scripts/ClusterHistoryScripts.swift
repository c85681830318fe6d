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
            if type(added) ~= 'table' then redis.call('ZADD', HI, redis.call('INCR', HS), \(ch)) end
          elseif type(added) ~= 'table' then
            -- (An error: an id at or below the stream's last, a data set restored from an
            -- older copy; the run is not kept, as with history 0.)
            local step = math.floor(\(last) / STEP)
            if math.floor((\(last) - \(n)) / STEP) ~= step then
              local note = f('%d-%d', \(last), \(cum) - \(bytes))
              local slot = 't' .. (step % RING)
              local old = redis.call('HGET', \(mk), 't' .. ((step + 1) % RING))
              local before, base = 0, 0
              if old then
                before = tonumber(string.match(old, '%-(%d+)$')) or 0
                base = tonumber(redis.call('HGET', \(mk), 'tb') or '0')
              end
              if before > base then
                redis.call('XTRIM', hk, 'MINID', old)
                redis.call('HSET', \(mk), slot, note, 'tb', f('%d', before))
                redis.call('DECRBY', HB, f('%d', before - base))
              else
                redis.call('HSET', \(mk), slot, note)
              end
            end
          end
        end

        """
    }

    /// The data set's history bytes: ARGV = the bytes this node kept since it last called.
    /// Adds them to `{p}hb`; then, while that is above `history_bytes`, the channel ranked
    /// first in `{p}hi` loses its oldest run (its bytes: the run's cumulative total less the
    /// channel's `tb`) and goes to the back of the ranking, or leaves it with its last run.
    /// Channels so take turns, each losing its oldest run, in the order they came into
    /// history. Returns the bytes now counted.
    static func settle(_ parameters: ClusterScriptParameters) -> String {
        parameters.prelude + #"""
        local total = redis.call('INCRBY', HB, ARGV[1])
        while total > HBYTES do
          local ch = redis.call('ZRANGE', HI, 0, 0)[1]
          if ch == nil then break end
          local hk, mk = H .. ch, M .. ch
          local oldest = redis.call('XRANGE', hk, '-', '+', 'COUNT', 1)[1]
          if oldest == nil then
            redis.call('ZREM', HI, ch)
          else
            redis.call('XDEL', hk, oldest[1])
            local upto = tonumber(string.match(oldest[1], '%-(%d+)$')) or 0
            local base = tonumber(redis.call('HGET', mk, 'tb') or '0')
            if upto > base then
              redis.call('HSET', mk, 'tb', f('%d', upto))
              total = redis.call('DECRBY', HB, f('%d', upto - base))
            end
            if redis.call('XLEN', hk) == 0 then
              redis.call('DEL', hk)
              redis.call('ZREM', HI, ch)
            else
              redis.call('ZADD', HI, redis.call('INCR', HS), ch)
            end
          end
        end
        return total
        """#
    }
}
