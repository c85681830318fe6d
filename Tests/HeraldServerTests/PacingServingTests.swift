import Foundation
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Pacing (`pace_pending`, `PaceKeeper`): a publisher that outruns a subscriber is not read
/// until the subscriber caught up, so the queue stays small; nothing is lost or reordered,
/// and a subscriber that stops reading holds publishers back once, for at most
/// `Broker.paceLimitMs`.
@Suite struct PacingServingTests {
    private static let payload = String(repeating: "p", count: 200)

    /// Sends `count` publishes on `channel` from a thread of its own (the daemon may stop
    /// reading them, and the caller reads meanwhile).
    private func publishInBackground(_ publisher: TestClient, channel: String, count: Int) -> FloodRun.Pending<Bool> {
        let done = FloodRun.Pending(false)
        let batch = Array((1...count).map { #"{"op":"pub","ch":"\#(channel)","data":"\#($0) \#(Self.payload)"}"# }
            .joined(separator: "\n").utf8) + [10]
        let box = UncheckedClient(publisher)
        Thread.detachNewThread {
            box.client.send(bytes: batch)
            done.finish(true)
        }
        return done
    }

    /// The subscriber starts reading late, so the daemon's queue for it passes the bound
    /// whatever the kernel's socket buffers hold (at most about 4 MB here, of 10.8 MB).
    @Test func aPublisherThatOutrunsItsSubscriberIsPacedAndEveryEventArrivesInOrder() throws {
        let daemon = try DaemonProcess(config: "pace_pending: 65536", arguments: ["--workers", "1"])
        let subscriber = try daemon.client()
        let publisher = try daemon.client()
        _ = try subscriber.request(#"{"op":"sub","ch":"paced"}"#)
        let count = 40_000
        let sent = publishInBackground(publisher, channel: "paced", count: count)
        usleep(300_000)
        for expected in 1...count {
            let event = try subscriber.frame(timeout: 10)
            #expect(event["seq"] as? Int == expected)
            #expect((event["data"] as? String)?.hasPrefix("\(expected) ") == true)
            if event["seq"] as? Int != expected { return }
        }
        #expect(sent.wait())
        let stats = try publisher.request(#"{"op":"stats"}"#)
        #expect(stats["msgs_out"] as? Int == count)
        #expect(stats["slow_consumers"] as? Int == 0)
        let paced = stats["paced"] as? Int ?? 0
        #expect(paced >= 1, "\(stats)")
        #expect((stats["pace_timeouts"] as? Int ?? -1) <= paced)
    }

    /// A subscriber that reads nothing: while the kernel's socket buffers take its bytes,
    /// each pause ends at the next write; once they are full, the first pause runs to its
    /// limit, and then it paces nobody (without the exemption every 64 KiB read of the
    /// publisher's would wait out the limit: dozens of timeouts here).
    @Test func aSubscriberThatNeverReadsHoldsThePublisherBackOnlyOnce() throws {
        let daemon = try DaemonProcess(config: "pace_pending: 65536", arguments: ["--workers", "1"])
        let stuck = try daemon.client()
        _ = try stuck.request(#"{"op":"sub","ch":"stuck"}"#)
        let publisher = try daemon.client()
        let count = 40_000
        let sent = publishInBackground(publisher, channel: "stuck", count: count)
        #expect(sent.wait())
        // Every publish was read and queued for `stuck` (10.8 MB, under `max_pending`).
        #expect(try publisher.request(#"{"op":"ping","rid":1}"#)["rid"] as? Int == 1)
        let stats = try publisher.request(#"{"op":"stats"}"#)
        #expect(stats["slow_consumers"] as? Int == 0)
        #expect(stats["msgs_out"] as? Int == count)
        #expect((stats["paced"] as? Int ?? 0) >= 1, "\(stats)")
        #expect(stats["pace_timeouts"] as? Int == 1, "\(stats)")
        // It reads again and catches up: everything is there, in order.
        for expected in 1...count {
            let event = try stuck.frame(timeout: 10)
            #expect(event["seq"] as? Int == expected)
            if event["seq"] as? Int != expected { return }
        }
    }

    @Test func pacingCanBeTurnedOff() throws {
        let daemon = try DaemonProcess(config: "pace_pending: 0", arguments: ["--workers", "1"])
        let subscriber = try daemon.client()
        let publisher = try daemon.client()
        _ = try subscriber.request(#"{"op":"sub","ch":"free"}"#)
        let count = 5_000
        let sent = publishInBackground(publisher, channel: "free", count: count)
        for expected in 1...count { #expect(try subscriber.frame(timeout: 10)["seq"] as? Int == expected) }
        #expect(sent.wait())
        let stats = try publisher.request(#"{"op":"stats"}"#)
        #expect(stats["paced"] as? Int == 0)
        #expect(stats["pace_timeouts"] as? Int == 0)
    }

    @Test func aPacedPublisherThatHangsUpLeavesNothingBehind() throws {
        let daemon = try DaemonProcess(config: "pace_pending: 65536", arguments: ["--workers", "1"])
        let stuck = try daemon.client()
        _ = try stuck.request(#"{"op":"sub","ch":"gone"}"#)
        for _ in 0..<20 {
            let publisher = try daemon.client()
            let batch = String(repeating: #"{"op":"pub","ch":"gone","data":"\#(Self.payload)"}"# + "\n", count: 500)
            publisher.send(bytes: Array(batch.utf8))
            publisher.closeNow()
        }
        // Every publisher's close is seen (a paused one once its pause ends) and its
        // publishes, all read before the close, reach `stuck` in order.
        let observer = try daemon.client()
        var stats: [String: Any] = [:]
        let deadline = Date().addingTimeInterval(10)
        repeat {
            stats = try observer.request(#"{"op":"stats"}"#)
            if stats["connections"] as? Int == 2 { break }
            usleep(20_000)
        } while Date() < deadline
        #expect(stats["connections"] as? Int == 2, "\(stats)")
        #expect(stats["slow_consumers"] as? Int == 0)
        for expected in 1...(20 * 500) {
            let event = try stuck.frame(timeout: 10)
            #expect(event["seq"] as? Int == expected)
            if event["seq"] as? Int != expected { return }
        }
    }
}

/// A test client handed to one other thread, which alone uses it until it is done.
private final class UncheckedClient: @unchecked Sendable {
    let client: TestClient
    init(_ client: TestClient) { self.client = client }
}
