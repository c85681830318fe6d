// herald-client-bench: how fast one client subscriber takes events from heraldd, per delivery
// path, in one run against one daemon (issue 17, "Fast typed decoding"):
//
//   herald-client-bench [--port 7400] [--count 200000] [--modes socket,raw,typed,stream,json,decode]
//
//   socket  a plain TCP reader that counts lines: what the daemon delivers to one connection
//   raw     `subscribe(raw:)`: frames split and routed, no payload decoding
//   typed   `subscribe(Quote.self)`: the closure path, decoding a 5-field struct per event
//   stream  `events(Quote.self)`: the same through the AsyncSequence
//   json    the typed closure path with Foundation's JSONDecoder, for comparison
//   decode  no daemon: `RawJSON.decode` of the same payload in a loop, the decoder alone
//
// A raw TCP publisher sends `--count` events (formatted once, before the first mode runs) as
// fast as the daemon takes them; the figures are
// events received per second from the first publish to the last event received, and the
// process's CPU time (user + system, all threads, the in-process publisher included) per
// event: on a loaded machine the second moves much less than the first, and the client's own
// cost per event is a mode's CPU time minus the `socket` mode's. The daemon
// must keep the backlog (default max_pending 64 MiB holds 200,000 of these ~110-byte events).
import Dispatch
import Foundation
import Herald
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Ends the run with a message (a refused connection, a daemon that went away, bad usage).
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

/// The benchmark's event: five fields of the usual kinds.
struct Quote: HeraldEvent {
    static let channel = Channel("bench", "decode")
    var id: Int
    var symbol: String
    var price: Double
    var volume: Int
    var live: Bool
}

/// A blocking TCP connection to the daemon, for the publisher and the socket reader.
final class RawConnection {
    let fd: Int32

    init(port: Int) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if result != 0 { fail("herald-client-bench: cannot connect to 127.0.0.1:\(port)") }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { fail("herald-client-bench: write failed") }
            offset += n
        }
    }

    /// Reads until `lines` newlines were seen; returns how long that took.
    func countLines(_ lines: Int) {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var seen = 0
        while seen < lines {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { fail("herald-client-bench: read failed") }
            for i in 0..<n where buffer[i] == 10 { seen += 1 }
        }
    }
}

/// The `pub` lines for `count` quotes, in batches of about 100 kB (one write each).
///
/// Built once, before any mode is measured: formatting them while publishing cost the
/// process as much CPU as a third of the raw path, in the measured window, on a box whose two
/// cores are shared by the daemon, the publisher and the subscriber.
func publishBatches(count: Int) -> [[UInt8]] {
    var batches: [[UInt8]] = []
    var batch: [UInt8] = []
    for i in 0..<count {
        let line = #"{"op":"pub","ch":"bench.decode","data":{"id":\#(i),"symbol":"ACME","price":123.45,"volume":\#(1000 + i % 977),"live":true}}"# + "\n"
        batch += Array(line.utf8)
        if batch.count > 100_000 || i == count - 1 {
            batches.append(batch)
            batch.removeAll(keepingCapacity: true)
        }
    }
    return batches
}

/// Publishes prepared batches on a raw connection.
func publish(_ batches: [[UInt8]], port: Int) {
    let publisher = RawConnection(port: port)
    for batch in batches { publisher.send(batch) }
    // Keep the connection until the daemon has read it all (it is closed on deinit).
    Thread.sleep(forTimeInterval: 0.5)
    withExtendedLifetime(publisher) {}
}

/// Counts deliveries and wakes the waiter at `target`.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    private let done = DispatchSemaphore(value: 0)
    let target: Int

    init(target: Int) { self.target = target }

    func add() {
        if value.add(1, ordering: .relaxed).newValue == target { done.signal() }
    }

    func wait(seconds: Double) -> Bool { done.wait(timeout: .now() + seconds) == .success }
    var count: Int { value.load(ordering: .relaxed) }
}

/// CPU seconds (user + system) this process has used so far.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// One measured run: set up the subscriber, publish, wait; events per second and CPU µs per event.
func measure(_ mode: String, count: Int, port: Int, batches: [[UInt8]]) async throws -> (rate: Double, cpu: Double) {
    let start: UInt64
    let finished: Bool
    let counter = Counter(target: count)
    let cpuStart = cpuSeconds()
    switch mode {
    case "decode":
        // The decoder alone, on this thread: no daemon, no I/O thread, no publisher.
        let payloads = (0..<1_000).map { i in
            RawJSON(#"{"id":\#(i),"symbol":"ACME","price":123.45,"volume":\#(1000 + i % 977),"live":true}"#)
        }
        start = DispatchTime.now().uptimeNanoseconds
        for i in 0..<count {
            if try payloads[i % payloads.count].decode(as: Quote.self).live { counter.add() }
        }
        finished = true
    case "socket":
        let reader = RawConnection(port: port)
        reader.send(Array(#"{"op":"sub","ch":"bench.decode","sub":"s","rid":1}"#.utf8) + [10])
        reader.countLines(2)   // info, then the sub's ok
        start = DispatchTime.now().uptimeNanoseconds
        Thread.detachNewThread { publish(batches, port: port) }
        reader.countLines(count)
        finished = true
    default:
        let client = HeraldClient(port: port, name: "bench-\(mode)")
        defer { client.close() }
        try await client.connect()
        var keep: [Any] = []
        switch mode {
        case "raw":
            keep.append(try client.subscribe(raw: Quote.channel) { _, _ in counter.add() })
        case "typed":
            keep.append(try client.subscribe(Quote.self) { quote, _ in if quote.live { counter.add() } })
        case "json":
            keep.append(try client.subscribe(raw: Quote.channel) { data, _ in
                if let data, let quote = try? JSONDecoder().decode(Quote.self, from: Data(data.bytes)), quote.live { counter.add() }
            })
        case "stream":
            let stream = try client.events(Quote.self, buffering: .unbounded)
            keep.append(stream.subscription)
            Task { for await delivery in stream where delivery.event.live { counter.add() } }
        default:
            fail("herald-client-bench: unknown mode \(mode)")
        }
        if let token = keep.first as? Subscription { try await token.ready() }
        start = DispatchTime.now().uptimeNanoseconds
        Thread.detachNewThread { publish(batches, port: port) }
        finished = await Task.detached { counter.wait(seconds: 120) }.value
        withExtendedLifetime(keep) {}
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    if !finished { print("\(mode): only \(counter.count) of \(count) events in 120 s") }
    let received = Double(finished ? count : counter.count)
    return (received / seconds, (cpuSeconds() - cpuStart) * 1e6 / max(1, received))
}

var port = 7400
var count = 200_000
var modes = ["socket", "raw", "typed", "stream", "json"]
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port": port = Int(arguments.next() ?? "") ?? port
    case "--count": count = Int(arguments.next() ?? "") ?? count
    case "--modes": modes = (arguments.next() ?? "").split(separator: ",").map(String.init)
    default: fail("usage: herald-client-bench [--port P] [--count N] [--modes socket,raw,typed,stream,json,decode]")
    }
}
var results: [String: (rate: Double, cpu: Double)] = [:]
let batches = modes == ["decode"] ? [] : publishBatches(count: count)
for mode in modes {
    let result = try await measure(mode, count: count, port: port, batches: batches)
    results[mode] = result
    print("\(mode) \(Int(result.rate)) events/s \(String(format: "%.2f", result.cpu)) cpu_us/event")
}
print("{" + modes.map { "\"\($0)\":{\"events_per_s\":\(Int(results[$0]?.rate ?? 0)),\"cpu_us\":\(String(format: "%.2f", results[$0]?.cpu ?? 0))}" }.joined(separator: ",") + "}")
