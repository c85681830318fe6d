#if canImport(Glibc)
import Glibc
#endif

/// `heraldd --reshard OLD NEW [--key-prefix P]`: moves every channel whose server changes
/// when the cluster's shard list goes from OLD to NEW, with the cluster stopped (issue 33;
/// docs/operations.md, "Changing the shard list").
///
/// **What moves with a channel** (the key layout of the scripts in `Cluster/Scripts`): its
/// three keys, `{p}m:CH` (the hash: `seq`, `rev`, the retained state, history marks `cb`
/// `tb` `t0…`, the history charge `hc` `hu`, `lost`), `{p}h:CH` (its history stream) and
/// `{p}l:CH` (its list's items), copied with `DUMP` and `RESTORE … REPLACE`, so `seq`, `rev`,
/// every history entry id and every list item are the same bytes afterwards; and its
/// membership in the server's sets: `{p}sk` (channels holding content, score 0), `{p}hi`
/// (channels holding history, in eviction order) and `{p}ui:USER` (the channels charged to
/// a user's history). On the destination it is ranked at the back of `{p}hi` and
/// `{p}ui:USER` (a rank from its `{p}hs`, as a new stream gets): ranks of two servers are not
/// comparable, so the moved channels are evicted after the destination's own. Not moved:
/// the cluster's own records, which stay on shard 0 (nodes, interest, queue-group counts
/// `{p}g:…`, which are per pattern and per node, locks, links, handlers, instance owners
/// `{p}own:CH`, leases), and `{p}uhl`, the users' history limits, which `settle` writes
/// before it reads.
///
/// **Counters.** A server's `{p}rb` (retained bytes: `#CH + c` of each channel whose `k` is
/// `v` or `l`), `{p}ub:USER` (the same, per holder `u`), `{p}hb` (history bytes: `cb - tb`
/// of each channel, plus `streamOverheadBytes` per existing stream) and `{p}uh` (per history
/// user `hu`: `hc - tb` plus the overhead, for each channel `settle` charged) are sums over
/// its channels, the sums `ClusterInstanceScripts.clear` takes a channel off. Instead of
/// subtracting on the source and adding on the destination as each channel moves, which a
/// run interrupted between the copy and the counters would apply twice or not at all, they
/// are *recomputed* at the end from the channel hashes on every server (`ShardCounters`),
/// once every channel sits where it belongs: idempotent, so an interruption anywhere is
/// repaired by the next run, and a counter that had drifted (bytes a node kept but never
/// settled before it stopped) comes out exact. `{p}sk` and `{p}hi` move member by member,
/// and are checked against the counts at the end (a mismatch is reported, not fatal).
///
/// **Order, and resuming.** Per batch of channels: read (`DUMP`, the hash fields) on the
/// source, restore on the destination, and only when every restore succeeded delete on the
/// source; then record the source's `SCAN` cursor and the channels moved in `{p}reshard` on
/// shard 0 (`ReshardProgress`). Killed anywhere, a channel is on its source, on both (the next
/// run copies it again, `REPLACE`, and deletes it), or on its destination alone (the next run
/// no longer sees it on the source). The same command resumes from the recorded cursors; a
/// different OLD or NEW is refused while the record is there. `{p}shards` holds a marker
/// (`ReshardPlan.marker`) from the start until the end, so a node started meanwhile finds
/// neither list and refuses.
///
/// **Counting and checking.** Before anything moves, a `SCAN {p}m:*` pass over OLD's servers
/// counts every channel and those that will move (exact for a server nothing writes to,
/// which the stopped cluster is; `DBSIZE` would count every key, not channels), and checks
/// that the servers only NEW names hold no channel. At the end a `SCAN {p}*` pass over every
/// server finds each channel on its NEW server and nowhere else, and the same number of
/// channels as before; then the counters are written, `{p}shards` is set to NEW (without
/// credentials) and `{p}reshard` deleted. A channel found off its server sends the next run
/// back to the move pass; a different count stops with both numbers.
final class Reshard {
    /// What to do.
    let plan: ReshardPlan
    /// One connection per server of `plan.servers`, in that order.
    let links: [PipelinedRedis]
    /// What is done (`{p}reshard`).
    var progress: ReshardProgress
    /// Where progress and messages go (stderr).
    let say: (String) -> Void
    /// When the run started (monotonic seconds).
    let startedAt = ReshardMeter.now()
    /// `progress.moved` when this run started.
    var movedBefore = 0

    /// How many keys one `SCAN` step asks for.
    static let scanCount = 1_000
    /// How many channels go in one batch (one pipelined round trip per server involved):
    /// their `DUMP`s are held in memory together.
    static let batchSize = 256

    /// Connects to every server of `plan`.
    /// - Throws: `ReshardError.failed` naming a server that cannot be reached or refused the credentials.
    init(plan: ReshardPlan, say: @escaping (String) -> Void) throws(ReshardError) {
        self.plan = plan
        self.say = say
        var links: [PipelinedRedis] = []
        for server in plan.servers {
            do throws(ClusterError) {
                links.append(try PipelinedRedis(server.address, credentials: server.credentials))
            } catch {
                throw ReshardError(error)
            }
        }
        self.links = links
        progress = ReshardProgress(old: plan.old.recorded, new: plan.new.recorded, channels: 0, moving: 0)
    }

    /// Runs `heraldd --reshard`: parses the lists, does the work, and says how it went.
    /// - Parameters:
    ///   - old: OLD, comma-separated `redis://` URLs.
    ///   - new: NEW, likewise.
    ///   - prefix: `cluster.key_prefix`.
    /// - Returns: the exit code: 0 done (or nothing to do), `Daemon.usageError` refused,
    ///   `Daemon.startError` failed part-way (run the same command again).
    static func main(old: String, new: String, prefix: String) -> Int32 {
        // A server that closes the connection must not kill the tool silently mid-write.
        signal(SIGPIPE, SIG_IGN)
        let say = { (line: String) in printLine("heraldd --reshard: " + line, to: 2) }
        do throws(ReshardError) {
            let plan = try makePlan(old: old, new: new, prefix: prefix)
            let reshard = try Reshard(plan: plan, say: say)
            defer { reshard.links.forEach { $0.close() } }
            guard let summary = try reshard.run() else { return 0 }
            printLine(summary, to: 1)
            return 0
        } catch {
            switch error {
            case .refused: say("refused: " + error.description)
            case .failed: say("failed: " + error.description)
            }
            return error.exitCode
        }
    }

    /// Reads both lists into a plan.
    static func makePlan(old: String, new: String, prefix: String) throws(ReshardError) -> ReshardPlan {
        let oldList: ShardList
        let newList: ShardList
        do throws(ClusterURLError) {
            oldList = try ShardList(parsing: old)
        } catch {
            throw .refused("OLD: " + error.description)
        }
        do throws(ClusterURLError) {
            newList = try ShardList(parsing: new)
        } catch {
            throw .refused("NEW: " + error.description)
        }
        return try ReshardPlan(old: oldList, new: newList, prefix: prefix)
    }

    /// The whole run: start (or resume), the move pass, the check pass.
    /// - Returns: the summary to print, nil when there was nothing to do.
    func run() throws(ReshardError) -> String? {
        guard try start() else { return nil }
        movedBefore = progress.moved
        if progress.phase == .move {
            try movePass()
            progress.phase = .check
            try record([Array("phase".utf8), Array(ReshardProgress.Phase.check.rawValue.utf8)])
        }
        return try checkPass()
    }

    /// The replies to `commands` on server `server`.
    /// - Throws: `ReshardError.failed` when the connection fails.
    func pipeline(_ server: Int, _ commands: [[[UInt8]]]) throws(ReshardError) -> [RedisReply] {
        do throws(ClusterError) {
            return try links[server].pipeline(commands)
        } catch {
            throw ReshardError(error)
        }
    }

    /// Runs `commands` on `server` and fails on the first error reply.
    /// - Parameter doing: what they do, for the message.
    @discardableResult
    func runAll(_ server: Int, _ commands: [[[UInt8]]], doing: String) throws(ReshardError) -> [RedisReply] {
        let replies = try pipeline(server, commands)
        if let failure = replies.lazy.compactMap(\.failure).first {
            throw .failed("Redis at \(plan.servers[server].address), \(doing): \(failure)")
        }
        return replies
    }

    /// One `SCAN` step on `server`: the next cursor and the keys.
    func scan(_ server: Int, cursor: String, match: [UInt8]) throws(ReshardError) -> (String, [[UInt8]]) {
        let reply = try runAll(server, [[Array("SCAN".utf8), Array(cursor.utf8), Array("MATCH".utf8), match,
                                         Array("COUNT".utf8), Array(String(Self.scanCount).utf8)]], doing: "SCAN")[0]
        guard let parts = reply.elements, parts.count == 2, let next = parts[0].bytes, let keys = parts[1].elements else {
            throw .failed("Redis at \(plan.servers[server].address): SCAN gave an unexpected reply")
        }
        return (String(decoding: next, as: UTF8.self), keys.compactMap(\.bytes))
    }

    /// Writes `fields` into `{p}reshard` on shard 0.
    func record(_ fields: [[UInt8]]) throws(ReshardError) {
        try runAll(0, [[Array("HSET".utf8), plan.key("reshard")] + fields], doing: "recording the progress")
    }

    /// The channel names among `keys` (those under `{p}m:`).
    func channels(in keys: [[UInt8]]) -> [[UInt8]] {
        let stem = plan.key("m:")
        return keys.compactMap { $0.starts(with: stem) ? Array($0.dropFirst(stem.count)) : nil }
    }

    /// Writes `text` and a newline to file descriptor `fd` (1 stdout, 2 stderr).
    static func printLine(_ text: String, to fd: Int32) {
        let bytes = Array((text + "\n").utf8)
        var at = 0
        while at < bytes.count {
            let wrote = bytes.withUnsafeBytes { write(fd, $0.baseAddress.map { $0 + at }, $0.count - at) }
            if wrote <= 0 { return }
            at += wrote
        }
    }
}
