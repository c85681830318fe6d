/// What the data-path scripts (`publish`, `state`, `settle`) are built with: the key prefix
/// and the limits, written into the Lua source as constants (docs/cluster.md, "What a script
/// costs inside Redis").
///
/// Every `ARGV` element costs a script call about 1,500 instructions inside Redis (a Lua string,
/// its hash, a table slot, the garbage collector), and so does every string a script builds:
/// values that change only with the configuration are not sent with every call. When they
/// change (SIGHUP), the engine loads the scripts again under their new SHAs
/// (`ClusterEngine.reloadScriptsIfChanged`).
struct ClusterScriptParameters: Equatable {
    /// `cluster.key_prefix`.
    var prefix: String
    /// `history`: events kept per channel.
    var history: Int
    /// `history_bytes`: bytes of history over the data set.
    var historyBytes: Int
    /// `max_value_bytes`.
    var maxValueBytes: Int
    /// `max_list_length`.
    var maxListLength: Int
    /// `max_retained_bytes`.
    var maxRetainedBytes: Int
    /// `dedup_window_ms`: how long a `pub` `id` is remembered.
    var dedupWindowMs: Int
    /// `max_dedup_ids`, this shard's share: most ids remembered at once, oldest dropped first.
    var maxDedupIDs: Int

    /// The parameters of `config` over `shards` Redis primaries: each shard's scripts
    /// bound its share of the data set's figures (`history_bytes` and `max_retained_bytes`
    /// divided by the shard count, rounded up), so that N shards together hold what one
    /// would (docs/architecture.md, "Several Redis primaries").
    init(prefix: String, config: Config, shards: Int = 1) {
        self.prefix = prefix
        history = config.history
        historyBytes = Self.share(config.historyBytes, of: shards)
        maxValueBytes = config.maxValueBytes
        maxListLength = config.maxListLength
        maxRetainedBytes = Self.share(config.maxRetainedBytes, of: shards)
        dedupWindowMs = config.dedupWindowMs
        maxDedupIDs = Self.share(config.maxDedupIDs, of: shards)
    }

    /// One shard's share of `figure` (0, no limit, stays 0).
    static func share(_ figure: Int, of shards: Int) -> Int {
        shards <= 1 || figure <= 0 ? figure : (figure + shards - 1) / shards
    }

    /// How far past `history` a channel's history may grow before it is trimmed back in one
    /// step: a quarter of it, so a trim's cost is shared by that many events.
    var trimStep: Int { max(1, history / 4) }

    /// How many trim notes a channel keeps (`ClusterHistoryScripts.keep`): a trim goes back
    /// to the run that crossed the step `trimRing - 1` steps before, which holds that step's
    /// first `seq`, so at least `(trimRing - 1) * trimStep + 1` events stay: more than
    /// `history`, and at most about a quarter more before the next trim.
    var trimRing: Int { (history + trimStep - 1) / trimStep + 1 }

    /// How many history bytes a node adds before it tells Redis (`settle`): one 64th of
    /// `history_bytes`, at most 64 KiB, so the cap is passed by at most that per node.
    var settleBytes: Int { max(1, min(historyBytes / 64, 65_536)) }

    /// The Lua prelude every data-path script starts with: the key stems as string
    /// constants (made once, when the script is loaded), the limits as numbers, and `f`,
    /// `string.format` (`%d` formats a number at half the cost of Lua's own `..`).
    var prelude: String {
        """
        local p = \(Self.lua(prefix))
        local M, H, HI, HS, HB, N, L = \(key("m:")), \(key("h:")), \(key("hi")), \(key("hs")), \(key("hb")), \(key("n:")), \(key("l:"))
        local HIST, STEP, RING, HBYTES = \(history), \(trimStep), \(trimRing), \(historyBytes)
        local MAXVALUE, MAXLEN, MAXRET = \(maxValueBytes), \(maxListLength), \(maxRetainedBytes)
        local OVER = \(ClusterHistoryScripts.streamOverheadBytes)
        local DWIN, DMAX = \(max(1, dedupWindowMs)), \(maxDedupIDs)
        local f = string.format

        """
    }

    /// `PREFIX` + `stem` as one Lua string literal.
    func key(_ stem: String) -> String { Self.lua(prefix + stem) }

    /// `text` as a Lua string literal: every byte outside letters, digits and `:_.-{}` is
    /// written as a three-digit decimal escape, so a prefix cannot end the literal early.
    static func lua(_ text: String) -> String {
        var out = "'"
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: ":"), UInt8(ascii: "_"), UInt8(ascii: "."),
                 UInt8(ascii: "-"), UInt8(ascii: "{"), UInt8(ascii: "}"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let digits = String(byte)
                out += "\\" + String(repeating: "0", count: 3 - digits.count) + digits
            }
        }
        return out + "'"
    }
}
