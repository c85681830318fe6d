// The fixed-rate latency workload (issue 16, item 4): one publisher sends at a steady rate
// whatever the deliveries do (an open loop, like a real app's events), one subscriber times
// every delivery against its send. Unlike `latency` (one message in flight at a time), it
// shows what queues and batching in the broker cost at a moderate, realistic load.
#if canImport(Glibc)
import Glibc
#endif

/// The send time of every message of a run, written by the publisher thread before it sends
/// message k and read by the subscriber after delivery k arrived (the write system call in
/// between orders the two).
final class SendTimes: @unchecked Sendable {
    let times: UnsafeMutablePointer<UInt64>
    let count: Int

    init(count: Int) {
        self.count = count
        times = UnsafeMutablePointer<UInt64>.allocate(capacity: count)
        times.initialize(repeating: 0, count: count)
    }

    deinit { times.deallocate() }
}

/// Sleeps until `deadline` on the monotonic clock (`nowNs`'s); returns at once if it passed.
func sleepUntil(_ deadline: UInt64) {
    var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

extension Runner {
    /// `count` messages (after `warmup` unmeasured ones) at `rate` per second on one channel;
    /// latency = delivery read − send, per message (p50/p99/p99.9).
    func rate() throws -> BenchResult {
        let (sub, pub, pubStat, drain) = try openPair()
        let total = o.warmup + o.count
        let sent = SendTimes(count: total)
        let interval = 1_000_000_000 / UInt64(o.rate)
        let frame = B.publishFrame(channel: "bench.a", size: o.size)
        let conn = pub.conn
        let publisher = OSThread.spawn {
            let start = nowNs() + 1_000_000
            for k in 0..<total {
                sleepUntil(start + UInt64(k) * interval)
                sent.times[k] = nowNs()
                do { try conn.writeAll(frame) } catch { return }
            }
        }
        let (samples, note) = timeDeliveries(sub, sent: sent)
        publisher.join()
        pub.conn.shutdownBoth()
        drain.join()
        pub.conn.closeFD()
        sub.conn.closeFD()
        if let n = note { writeStderr("herald-bench: warning: \(n)\n") }
        if let n = pubStat.note { writeStderr("herald-bench: warning: \(n)\n") }
        let measured = samples.sorted()
        let secs = Double(o.count) / Double(o.rate)
        return BenchResult(proto: B.label, workload: "rate", subs: 1, size: o.size, count: o.count,
                           expected: o.count, delivered: measured.count, seconds: secs,
                           msgsPerSec: secs > 0 ? Double(measured.count) / secs : 0,
                           p50: percentileMicros(measured, 0.5), p99: percentileMicros(measured, 0.99),
                           p999: percentileMicros(measured, 0.999))
    }

    /// Reads deliveries until all of `sent` arrived (or `idle` passes without bytes); every
    /// delivery of one read is stamped with the time that read returned.
    /// - Returns: the latencies (ns) of the measured messages, and what went wrong, if anything.
    private func timeDeliveries(_ sub: Session<B.Parser>, sent: SendTimes) -> ([UInt64], String?) {
        var parser = sub.parser
        parser.deliveries = 0
        sub.conn.setReadTimeout(o.idle)
        let cap = 1 << 20
        let buf = UnsafeMutableRawPointer.allocate(byteCount: cap, alignment: 64)
        defer { buf.deallocate() }
        var samples: [UInt64] = []
        samples.reserveCapacity(o.count)
        var note: String?
        loop: while parser.deliveries < sent.count {
            switch sub.conn.read(into: buf, capacity: cap) {
            case .bytes(let n):
                let before = parser.deliveries
                parser.feed(buf.assumingMemoryBound(to: UInt8.self), n)
                let now = nowNs()
                for k in before..<min(parser.deliveries, sent.count) where k >= o.warmup {
                    samples.append(now &- sent.times[k])
                }
                if parser.pongsDue > 0 {
                    for _ in 0..<parser.pongsDue where !B.pong.isEmpty { try? sub.conn.writeAll(B.pong) }
                    parser.pongsDue = 0
                }
            case .timeout:
                note = "no delivery for \(o.idle) s after \(parser.deliveries) of \(sent.count)"
                break loop
            case .eof:
                note = "subscriber connection closed by the broker"
                break loop
            case .failed(let e):
                note = "subscriber read failed: \(e)"
                break loop
            }
        }
        if parser.errors > 0 && note == nil { note = "broker error: \(parser.errorText)" }
        return (samples, note)
    }
}
