import Dispatch
import Foundation
import Herald
import Synchronization

/// `herald bench`: a quick pub/sub throughput and latency run through the client library,
/// to check a daemon and a network path from the command line (scripts/bench and
/// herald-bench are the full benchmark suite).
extension Commands {
    /// `bench [CHANNEL] [--count N] [--size B] [--timeout S] [--json]`: one connection
    /// subscribes, another publishes N events of B bytes (at most 1000 unreceived at a time, so
    /// the daemon never drops the subscriber as slow), each carrying its send time; prints
    /// messages, seconds, msgs/s and the p50/p99 latency from publish to handler.
    func bench(_ client: HeraldClient, timeout: Double?) async throws(HeraldClientError) -> ExitCode {
        let total = invocation.count ?? 10_000
        let size = invocation.size ?? 64
        let target = invocation.positionals.first.map { Channel(verbatim: $0) } ?? Channel("bench", "herald")
        let window = 1000
        let run = BenchRun(capacity: total)
        let done = ExitSignal()
        let subscription = try client.subscribe(raw: target, options: SubscriptionOptions(delivery: .ordered)) { data, _ in
            guard let sent = data.flatMap(Self.sendTime) else { return }
            if run.received(latency: DispatchTime.now().uptimeNanoseconds &- sent) == total { done.finish(.success) }
        }
        try await subscription.ready()

        let publisher = HeraldClient(configuration: client.configuration)
        defer { publisher.close() }
        try await publisher.connect()
        let padding = String(repeating: "x", count: max(0, size - 30))
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64((timeout ?? 60) * 1e9)
        let start = DispatchTime.now().uptimeNanoseconds
        var timedOut = false
        for sent in 0..<total {
            while sent - run.count >= window {
                if DispatchTime.now().uptimeNanoseconds > deadline {
                    timedOut = true
                    break
                }
                try? await Task.sleep(nanoseconds: 200_000)
            }
            if timedOut { break }
            try publisher.post(raw: RawJSON("[\(DispatchTime.now().uptimeNanoseconds),\"\(padding)\"]"), to: target)
        }
        if !timedOut {
            let remaining = Double(deadline &- min(deadline, DispatchTime.now().uptimeNanoseconds)) / 1e9
            Task {
                try? await Task.sleep(nanoseconds: UInt64(remaining * 1e9))
                done.finish(.timeout)
            }
        } else {
            done.finish(.timeout)
        }
        let code = await done.wait()
        withExtendedLifetime(subscription) {}
        let summary = run.summary(since: start)
        Output.line(invocation.json ? summary.json(size: size) : summary.pretty(size: size))
        if code == .timeout { Output.error("herald: bench: \(summary.messages) of \(total) events arrived in time") }
        return code
    }

    /// The send time at the start of a bench payload `[NANOS,"…"]`, without a JSON decoder.
    static func sendTime(_ data: RawJSON) -> UInt64? {
        var value: UInt64 = 0
        var digits = 0
        for byte in data.bytes.dropFirst() {
            guard byte >= 48, byte <= 57 else { break }
            value = value &* 10 &+ UInt64(byte - 48)
            digits += 1
        }
        return digits > 0 ? value : nil
    }
}

/// The latencies one bench run collected, shared by the handler and the publisher loop.
final class BenchRun: Sendable {
    private let latencies: Mutex<[UInt64]>
    private let last = Atomic<UInt64>(0)
    private let received = Atomic<Int>(0)

    init(capacity: Int) {
        var storage: [UInt64] = []
        storage.reserveCapacity(capacity)
        latencies = Mutex(storage)
    }

    /// Events received so far.
    var count: Int { received.load(ordering: .acquiring) }

    /// Records one event; returns how many have arrived.
    func received(latency: UInt64) -> Int {
        latencies.withLock { $0.append(latency) }
        last.store(DispatchTime.now().uptimeNanoseconds, ordering: .releasing)
        return received.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
    }

    /// The run's numbers, timed from `start` to the last event received.
    func summary(since start: UInt64) -> BenchSummary {
        let sorted = latencies.withLock { $0.sorted() }
        let end = last.load(ordering: .acquiring)
        let seconds = end > start ? Double(end - start) / 1e9 : 0
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let index = min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)
            return Double(sorted[max(0, index)]) / 1e6
        }
        return BenchSummary(messages: sorted.count, seconds: seconds,
                            rate: seconds > 0 ? Double(sorted.count) / seconds : 0,
                            p50: percentile(0.5), p99: percentile(0.99))
    }
}

/// What `herald bench` prints.
struct BenchSummary {
    let messages: Int
    let seconds: Double
    let rate: Double
    let p50: Double
    let p99: Double

    func pretty(size: Int) -> String {
        """
        messages \(messages)
        size \(size)
        seconds \(String(format: "%.3f", seconds))
        msgs/s \(Int(rate.rounded()))
        p50_ms \(String(format: "%.3f", p50))
        p99_ms \(String(format: "%.3f", p99))
        """
    }

    func json(size: Int) -> String {
        "{\"messages\":\(messages),\"size\":\(size),\"seconds\":\(String(format: "%.3f", seconds)),"
            + "\"msgs_per_s\":\(Int(rate.rounded())),\"p50_ms\":\(String(format: "%.3f", p50)),\"p99_ms\":\(String(format: "%.3f", p99))}"
    }
}
