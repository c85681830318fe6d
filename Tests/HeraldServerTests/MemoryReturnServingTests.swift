import Foundation
import HeraldTestSupport
import Testing

/// Freed memory goes back to the system (issue 32: after an attacker's tables were torn
/// down, RSS stayed where their peak had taken it, 12–29 MiB on each node of a cluster,
/// because malloc kept the freed blocks; `Server+MemoryReturn`).
@Suite(.serialized) struct MemoryReturnServingTests {
    @Test func aConnectionLeavingWithFiftyThousandGroupSubscriptionsLeavesRSSNearWhereItStarted() throws {
        let daemon = try DaemonProcess(config: "heartbeat_ms: 0,")
        let baseline = try #require(daemon.residentBytes)
        let attacker = try daemon.client()
        let count = 50_000
        let lines = (0..<count).map { #"{"op":"sub","ch":"g.\#($0).*","group":"q\#($0)","sub":"s\#($0)"}"# }
        attacker.send(bytes: Array(lines.map { $0 + "\n" }.joined().utf8))
        attacker.send(#"{"op":"ping","rid":1}"#)
        var answered = 0
        while try attacker.frame(timeout: 60)["pong"] == nil { answered += 1 }
        #expect(answered == count)
        let peak = try #require(daemon.residentBytes)
        #expect(peak > baseline + (16 << 20), "the subscriptions took memory: \(baseline) → \(peak)")
        attacker.closeNow()
        let watcher = try daemon.client()
        var left = -1
        for _ in 0..<100 where left != 0 {
            left = try watcher.request(#"{"op":"stats"}"#)["subscriptions"] as? Int ?? -1
            if left != 0 { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(left == 0, "the teardown finished")
        let bound = baseline + max(baseline / 10, 4 << 20)
        let deadline = Date().addingTimeInterval(10)
        var now = peak
        while Date() < deadline {
            now = daemon.residentBytes ?? 0
            if now <= bound { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(now <= bound, "RSS back within 10% (or 4 MiB) of \(baseline >> 20) MiB: \(now >> 20) MiB, peak \(peak >> 20) MiB")
    }
}
