import Foundation
import HeraldTestSupport
import Testing

/// Redis failover under a cluster (issue 15, docs/cluster.md "Redis failover: Sentinel and
/// `wait_replicas`"): a primary, a replica and three real sentinels on loopback, two real
/// heraldd nodes that find the primary through the sentinels. With `wait_replicas: 1` no
/// acknowledged `if_rev` write is lost over 20 kills of the primary; ops during a failover
/// are answered (ok or `unavailable`), never left hanging.
@Suite(.enabled(if: TestRedis.isAvailable && TestSentinel.isAvailable, "needs Debian's redis-server and redis-sentinel"),
       .serialized)
struct ClusterFailoverServingTests {
    @Test func noAcknowledgedWriteIsLostOverTwentyKillsOfThePrimary() throws {
        let rig = try SentinelRig(nodes: 2, waitReplicas: 1)
        let writers = rig.nodes.map { FailoverCounterWriter(port: $0.port) }
        defer { writers.forEach { $0.stop() } }
        func acks() -> [FailoverCounterWriter.Ack] { writers.flatMap { $0.outcomes.value.acks } }
        try SentinelRig.waitFor("the first acknowledged writes", seconds: 20) { acks().count >= 10 }
        var switchTimes: [Double] = []
        var resumeTimes: [Double] = []
        var readTimes: [Double] = []
        for round in 1...20 {
            let killedAt = Date()
            switchTimes.append(try rig.failover())
            // Service resumes: both nodes acknowledge writes again (checked before the next kill).
            try SentinelRig.waitFor("writes acknowledged after failover \(round)", seconds: 30) {
                writers.allSatisfy { writer in writer.outcomes.value.acks.contains { $0.at > killedAt } }
            }
            // Timed from the kill to the first success after the first refusal it caused
            // (answers already on their way at the kill do not count).
            let outcomes = writers.map(\.outcomes.value)
            let noticed = outcomes.flatMap(\.unavailableAt).filter { $0 > killedAt }.min() ?? killedAt
            let ack = outcomes.flatMap { $0.acks.map(\.at) }.filter { $0 > noticed }.min() ?? Date()
            resumeTimes.append(ack.timeIntervalSince(killedAt))
            let read = outcomes.flatMap(\.reads).filter { $0 > noticed }.min() ?? Date()
            readTimes.append(read.timeIntervalSince(killedAt))
        }
        writers.forEach { $0.stop() }
        let all = acks()
        let outcomes = writers.map(\.outcomes.value)
        let final = try Self.settledRead(rig.nodes[0])
        let finalValue = final["value"] as? Int ?? -1
        let finalRev = final["rev"] as? Int ?? -1
        let highestValue = all.map(\.value).max() ?? 0
        let highestRev = all.map(\.rev).max() ?? 0
        #expect(finalValue >= highestValue, "an acknowledged value was lost: final \(final), highest acknowledged \(highestValue)")
        #expect(finalRev >= highestRev, "an acknowledged rev was lost: final \(final), highest acknowledged \(highestRev)")
        #expect(Set(all.map(\.rev)).count == all.count, "no rev acknowledged twice")
        #expect(outcomes.allSatisfy { $0.hangs == 0 }, "every request answered: \(outcomes.map(\.hangs))")
        #expect(outcomes.allSatisfy { $0.unexpected.isEmpty }, "\(outcomes.flatMap(\.unexpected).prefix(5))")
        let reaped = rig.nodes.flatMap(\.log).filter { $0.contains("declared down") }
        #expect(reaped.isEmpty, "no node declared down by a failover (node_timeout_ms 5000): \(reaped.prefix(3))")
        let other = try Self.settledRead(rig.nodes[1])
        #expect(other["rev"] as? Int == finalRev, "both nodes read the same primary: \(other)")
        print("failover: \(all.count) acknowledged writes, \(outcomes.map(\.unavailable).reduce(0, +)) unavailable; "
              + "sentinels switched in \(Self.summary(switchTimes)), nodes read again after \(Self.summary(readTimes)), "
              + "writes acknowledged again (a replica back) after \(Self.summary(resumeTimes))")
    }

    /// `get k` on `node`, asked again while it answers `unavailable`: right after the last
    /// failover a sentinel can still move the nodes between servers for a moment (seen once
    /// in CI: both nodes `connection to Redis lost` at the final read). Only the wait is
    /// longer; what the read returns is checked as before.
    private static func settledRead(_ node: DaemonProcess) throws -> [String: Any] {
        var answer = try node.client().request(#"{"op":"get","ch":"k"}"#)
        let deadline = Date().addingTimeInterval(30)
        while answer["error"] as? String == "unavailable", Date() < deadline {
            Thread.sleep(forTimeInterval: 0.2)
            answer = try node.client().request(#"{"op":"get","ch":"k"}"#)
        }
        return answer
    }

    @Test func opsDuringAFailoverAreAnsweredNeverLeftHanging() throws {
        let rig = try SentinelRig(nodes: 2, waitReplicas: 1)
        let probes = rig.nodes.enumerated().map { FailoverOpsProbe(port: $1.port, name: "n\($0)") }
        defer { probes.forEach { $0.stop() } }
        try SentinelRig.waitFor("ops answered ok", seconds: 20) { probes.allSatisfy { $0.outcomes.value.ok > 20 } }
        // A switch Sentinel makes with the old primary still up (it becomes a replica), then a kill.
        for kill in [false, true] {
            let switchedAt = Date()
            try rig.failover(kill: kill)
            try SentinelRig.waitFor("ops answered ok after the failover (kill: \(kill))", seconds: 30) {
                probes.allSatisfy { $0.outcomes.value.lastOk > switchedAt }
            }
        }
        probes.forEach { $0.stop() }
        let outcomes = probes.map(\.outcomes.value)
        #expect(outcomes.allSatisfy { $0.hangs == 0 }, "every op answered within 8 s: \(outcomes.map(\.hangs))")
        #expect(outcomes.allSatisfy { $0.unexpected.isEmpty }, "only ok or unavailable: \(outcomes.flatMap(\.unexpected).prefix(5))")
        #expect(outcomes.allSatisfy { $0.unavailable > 0 }, "the switches were noticed: \(outcomes.map(\.unavailable))")
    }

    /// Planned failovers with the old primary still up (`SENTINEL FAILOVER`), the issue's
    /// first defect: nodes that followed each at its own poll were split over two primaries,
    /// gave one `seq` to two events and lost acknowledged ones. With the sentinels' notices
    /// and the fence on the old primary: no `seq` acknowledged twice, none going backwards for
    /// the subscriber, every acknowledged event delivered to it while it stayed connected;
    /// and with `wait_replicas` left out, a state write waits for the replica.
    @Test func plannedFailoversNeverGiveOneSeqToTwoEventsNorLoseAnAcknowledgedOne() throws {
        let rig = try SentinelRig(nodes: 2, waitReplicas: nil)
        let subscriber = try SeqProbe(subscribingTo: rig.nodes[1].port)
        let publishers = rig.nodes.enumerated().map { SeqProbe(publishingTo: $1.port, name: "p\($0)") }
        defer { publishers.forEach { $0.stop() }; subscriber.stop() }
        try SentinelRig.waitFor("publishes acknowledged", seconds: 20) { publishers.allSatisfy { $0.record.value.pairs.count > 20 } }
        for round in 1...2 {
            let switchedAt = Date()
            do { _ = try rig.failover(kill: false) } catch {
                print(rig.nodes.map { $0.log.suffix(40).joined(separator: "\n") }.joined(separator: "\n----\n"))
                throw error
            }
            try SentinelRig.waitFor("publishes acknowledged after failover \(round)", seconds: 30) {
                publishers.allSatisfy { $0.record.value.lastOk > switchedAt }
            }
        }
        publishers.forEach { $0.stop() }
        Thread.sleep(forTimeInterval: 1)
        subscriber.stop()
        let acked = publishers.flatMap { $0.record.value.pairs }
        let seen = subscriber.record.value
        let ackedSeqs = Dictionary(grouping: acked, by: \.seq).filter { $0.value.count > 1 }
        #expect(ackedSeqs.isEmpty, "no seq acknowledged for two events: \(ackedSeqs.prefix(3))")
        let backwards = zip(seen.pairs, seen.pairs.dropFirst()).filter { $0.seq >= $1.seq }
        #expect(backwards.isEmpty, "the subscriber's seqs only go up: \(backwards.prefix(3))")
        let delivered = Dictionary(seen.pairs.map { ($0.data, $0.seq) }, uniquingKeysWith: { first, _ in first })
        let missed = acked.filter { delivered[$0.data] != $0.seq }
        #expect(seen.ended || missed.isEmpty, "every acknowledged event delivered with its seq: \(missed.count) missed, e.g. \(missed.prefix(3))")
        #expect(rig.nodes.allSatisfy { node in node.log.contains { $0.contains("wait_replicas") && $0.contains("replicas=1") } },
                "wait_replicas defaults to 1 under Sentinel with a replica")
        #expect(rig.nodes.contains { node in node.log.contains { $0.contains("Sentinel switched the primary") } }, "the notice was heard")
    }

    @Test func aNodeWhoseSentinelsNameNoReachablePrimaryRefusesToStartSayingWhy() throws {
        let redis = try TestRedis()
        let sentinel = try TestSentinel(master: "herald", primaryPort: redis.port)
        let closed = try TestRedis.freePort()
        let config = #"cluster: { sentinel: { master: "other", addresses: ["127.0.0.1:\#(closed)", "127.0.0.1:\#(sentinel.port)"] }, node: "x" },"#
        do {
            _ = try DaemonProcess(config: config, arguments: ["--workers", "1"])
            Issue.record("the node started without a primary")
        } catch DaemonError.didNotStart(let log) {
            // The log line quotes the error (its quotes escaped).
            #expect(log.contains("no sentinel named a reachable primary for"), "\(log)")
            #expect(log.contains("127.0.0.1:\(closed): Connection refused"), "\(log)")
            #expect(log.contains("127.0.0.1:\(sentinel.port): does not know"), "\(log)")
        }
        // The same sentinel, asked for the name it monitors, lets a node start.
        let node = try DaemonProcess(config: #"cluster: { sentinel: { master: "herald", addresses: ["127.0.0.1:\#(closed)", "127.0.0.1:\#(sentinel.port)"] }, node: "y" },"#,
                                     arguments: ["--workers", "1"])
        #expect(try node.client().request(#"{"op":"set","ch":"k","value":1}"#)["rev"] as? Int == 1)
    }

    /// "low–high s (median m)" of some durations.
    private static func summary(_ seconds: [Double]) -> String {
        let sorted = seconds.sorted()
        guard let low = sorted.first, let high = sorted.last else { return "-" }
        let median = sorted[sorted.count / 2]
        return String(format: "%.1f–%.1f s (median %.1f)", low, high, median)
    }
}
