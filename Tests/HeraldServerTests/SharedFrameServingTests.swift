import Foundation
import HeraldTestSupport
import Testing

/// Subscribers of one channel under one subscription name get each event's frame from the
/// daemon's shared arena, written with `writev` (`Connection+Spans`). Over real sockets:
/// readers that keep up and readers that lag (partial writes, whose rest is copied) must
/// each see every event once, whole and in order, and one that stops reading must be cut off
/// without holding the others up.
@Suite struct SharedFrameServingTests {
    /// Reads `count` event frames on its own thread, sleeping `pause` µs between reads of at
    /// most `chunk` bytes (a lagging reader fills its socket, so the daemon's writes are partial).
    private final class Reader: @unchecked Sendable {
        let client: TestClient
        private let done = DispatchSemaphore(value: 0)
        private(set) var data: [Int] = []
        private(set) var seqs: [Int] = []
        private(set) var broken: [String] = []
        /// How many events it has read so far, for the publisher to keep in step.
        let progress = LockedValue(0)

        init(client: TestClient) { self.client = client }

        func start(count: Int, chunk: Int, pause: UInt32) {
            Thread { [self] in
                read(count: count, chunk: chunk, pause: pause)
                done.signal()
            }.start()
        }

        private func read(count: Int, chunk: Int, pause: UInt32) {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: chunk)
            let deadline = Date().addingTimeInterval(60)
            while data.count < count && broken.isEmpty && Date() < deadline {
                var poller = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 5000) > 0 else { break }
                let n = buffer.withUnsafeMutableBytes { Glibc.read(client.fd, $0.baseAddress, $0.count) }
                guard n > 0 else { break }
                pending.append(contentsOf: buffer[..<n])
                var start = 0
                while let newline = Reader.newline(in: pending, from: start) {
                    let whole = newline - start > 1000 && pending[newline - 2] == UInt8(ascii: "\"")
                        && pending[newline - 1] == UInt8(ascii: "}")
                    take(Array(pending[start..<min(newline, start + 128)]), whole: whole)
                    start = newline + 1
                }
                pending.removeFirst(start)
                if pause > 0 { usleep(pause) }
            }
        }

        /// `memchr` for the next newline: a debug build's `firstIndex(of:)` over 4 KB lines
        /// kept the reader behind the daemon.
        private static func newline(in bytes: [UInt8], from start: Int) -> Int? {
            bytes.withUnsafeBytes { raw in
                guard start < raw.count, let base = raw.baseAddress,
                      let found = memchr(base + start, 10, raw.count - start) else { return nil }
                return base.distance(to: UnsafeRawPointer(found))
            }
        }

        /// Reads `seq` and the number at the start of `data` from the line's first 128 bytes
        /// (`whole`: the line is longer than its payload and ends as an event frame does):
        /// a reader that parsed each 4 KB line as JSON fell behind a debug daemon on two cores.
        private func take(_ line: [UInt8], whole: Bool) {
            guard whole, let seq = Reader.number(after: Array(#""seq":"#.utf8), in: line),
                  let number = Reader.number(after: Array(#""data":""#.utf8), in: line) else {
                broken.append(String(decoding: line.prefix(200), as: UTF8.self))
                return
            }
            data.append(number)
            seqs.append(seq)
            progress.withLock { $0 = data.count }
        }

        /// The decimal number that follows `key` (and any run of `skipping`) in `line`.
        private static func number(after key: [UInt8], in line: [UInt8]) -> Int? {
            guard line.count > key.count,
                  let at = (0...(line.count - key.count)).first(where: { line[$0..<$0 + key.count].elementsEqual(key) })
            else { return nil }
            var k = at + key.count
            var value = 0
            let start = k
            while k < line.count, line[k] >= 48 && line[k] <= 57 {
                value = value * 10 + Int(line[k] - 48)
                k += 1
            }
            return k > start ? value : nil
        }

        func wait() { done.wait() }
    }

    @Test func fastAndLaggingReadersOfOneNameEachGetEveryEventWholeAndInOrder() throws {
        let daemon = try DaemonProcess(config: "max_pending: 33554432")
        let count = 3000
        let readers = try (0..<8).map { _ in Reader(client: try daemon.client()) }
        for reader in readers { #expect(try reader.client.request(#"{"op":"sub","ch":"sf.t","sub":"a"}"#)["ok"] != nil) }
        for (k, reader) in readers.enumerated() {
            // Three of them lag: small reads with pauses.
            reader.start(count: count, chunk: k < 3 ? 700 : 65536, pause: k < 3 ? 200 : 0)
        }
        let publisher = try daemon.client()
        let payload = String(repeating: "p", count: 1000)
        var batch = ""
        for n in 1...count {
            batch += #"{"op":"pub","ch":"sf.t","data":"\#(n)\#(payload)"}"# + "\n"
            if n % 100 == 0 {
                publisher.send(bytes: Array(batch.utf8))
                batch = ""
            }
        }
        for reader in readers { reader.wait() }
        for reader in readers {
            #expect(reader.broken.isEmpty, "\(reader.broken.prefix(2))")
            #expect(reader.data.count == count && reader.data == Array(1...count))
            #expect(reader.seqs.count == count && reader.seqs == Array(1...count))
        }
        #expect(try publisher.request(#"{"op":"ping","rid":7}"#)["rid"] as? Int == 7)
    }

    @Test func aReaderThatStopsIsCutOffAndTheOthersOfItsNameGetEverything() throws {
        // 12 MB for the one that stops: past its socket buffers and a 1 MiB max_pending.
        let daemon = try DaemonProcess(config: "max_pending: 1048576")
        let count = 3000
        let stopped = try daemon.client()
        #expect(try stopped.request(#"{"op":"sub","ch":"sf.t","sub":"a"}"#)["ok"] != nil)
        let readers = try (0..<4).map { _ in Reader(client: try daemon.client()) }
        for reader in readers {
            #expect(try reader.client.request(#"{"op":"sub","ch":"sf.t","sub":"a"}"#)["ok"] != nil)
            reader.start(count: count, chunk: 65536, pause: 0)
        }
        let publisher = try daemon.client()
        let payload = String(repeating: "p", count: 4000)
        for n in 1...count {
            publisher.send(#"{"op":"pub","ch":"sf.t","data":"\#(n)\#(payload)"}"#)
            // The readers that read keep within 50 events (200 KB) of the publisher, however
            // loaded the machine: only the one that stopped passes max_pending.
            if n % 25 == 0 {
                let deadline = Date().addingTimeInterval(30)
                while readers.contains(where: { $0.progress.value < n - 25 }) && Date() < deadline { usleep(1000) }
            }
        }
        for reader in readers { reader.wait() }
        for reader in readers {
            #expect(reader.broken.isEmpty, "\(reader.broken.prefix(2))")
            #expect(reader.data.count == count && reader.data == Array(1...count), "\(reader.data.count) \(reader.data.last ?? 0)")
        }
        var sawError = false
        while let frame = try? stopped.frame(timeout: 3) {
            if frame["error"] as? String == "slow_consumer" { sawError = true }
        }
        #expect(sawError)
        #expect(try publisher.request(#"{"op":"stats"}"#)["slow_consumers"] as? Int == 1)
    }
}
