import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `since` replays far larger than `max_pending`, against the real daemon (issue 13).
@Suite struct ReplayServingTests {
    /// Reads event lines from a socket and checks their `seq`s run 1, 2, 3… without a gap or
    /// a repeat; scans bytes instead of parsing JSON, as 200,000 lines are read.
    final class SeqReader {
        /// The socket read.
        let fd: Int32
        /// An unfinished last line, kept for the next read.
        private var carry: [UInt8] = []
        /// The last `seq` seen, 0 before any.
        private(set) var last = 0
        /// Lines that were not the next event in order (wrong `seq`, an error, anything else).
        private(set) var unexpected: [String] = []
        /// The first line, when it was not an event (the `sub`'s answer).
        private(set) var first: String?

        /// Reads from `fd` (the bytes after the `sub` request was sent).
        init(fd: Int32) { self.fd = fd }

        /// Reads until `seq` `target` arrived, the peer closed or `timeout` passed.
        /// - Returns: whether `target` was reached.
        func read(through target: Int, timeout: Double) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while last < target, unexpected.count < 5, deadline.timeIntervalSinceNow > 0 {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 200) >= 0 else { return false }
                guard poller.revents != 0 else { continue }
                let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { return false }
                scan(chunk[..<n])
            }
            return last >= target
        }

        /// Checks every whole line in `bytes` (plus what was carried over).
        private func scan(_ bytes: ArraySlice<UInt8>) {
            carry.append(contentsOf: bytes)
            var start = 0
            while let newline = carry[start...].firstIndex(of: 10) {
                check(carry[start..<newline])
                start = newline + 1
            }
            carry.removeFirst(start)
        }

        /// Takes one line: the answer first, then each event's `seq` must be the last plus 1.
        private func check(_ line: ArraySlice<UInt8>) {
            let key = Array(#""seq":"#.utf8)
            guard let at = line.indices.first(where: { line[$0...].starts(with: key) }) else {
                if last == 0 && first == nil && unexpected.isEmpty {
                    first = String(decoding: line, as: UTF8.self)
                    return
                }
                if unexpected.count < 5 { unexpected.append(String(decoding: line, as: UTF8.self)) }
                return
            }
            var seq = 0
            var k = at + key.count
            while k < line.endIndex, line[k] >= 48, line[k] <= 57 {
                seq = seq * 10 + Int(line[k] - 48)
                k += 1
            }
            if seq == last + 1 { last = seq } else if unexpected.count < 5 { unexpected.append(String(decoding: line, as: UTF8.self)) }
        }
    }

    /// Publishes `count` events on `r` from `publisher` and waits until the daemon took them all.
    static func publish(_ count: Int, from publisher: TestClient) throws {
        var batch: [UInt8] = []
        for k in 0..<count {
            batch.append(contentsOf: Array(#"{"op":"pub","ch":"r","data":\#(k)}"#.utf8) + [10])
            if batch.count > 1 << 20 {
                publisher.send(bytes: batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        publisher.send(bytes: batch)
        publisher.send(#"{"op":"ping","rid":"done"}"#)
        #expect(try publisher.frame(timeout: 60)["rid"] as? String == "done")
    }

    @Test(.timeLimit(.minutes(3)))
    func sinceZeroReplaysHistoryFarLargerThanMaxPendingExactlyOnceIssue13() throws {
        let daemon = try DaemonProcess(config: "max_pending: 65536, history: 300000, history_bytes: 268435456")
        let publisher = try daemon.client()
        try Self.publish(200_000, from: publisher)
        let reader = try daemon.client()
        reader.send(#"{"op":"sub","ch":"r","since":0,"rid":1}"#)
        let events = SeqReader(fd: reader.fd)
        #expect(events.read(through: 50_000, timeout: 60), "stopped at \(events.last): \(events.unexpected)")
        #expect(events.first == #"{"ok":"sub","rid":1,"sub":"s1","ch":"r","recovered":true}"#, "the ok comes first")
        // Live events published mid-replay come after the history, in order, once.
        try Self.publish(1_000, from: publisher)
        #expect(events.read(through: 201_000, timeout: 120), "stopped at \(events.last): \(events.unexpected)")
        #expect(events.unexpected.isEmpty, "\(events.unexpected)")
        #expect(try publisher.request(#"{"op":"stats"}"#)["slow_consumers"] as? Int == 0)
    }
}
