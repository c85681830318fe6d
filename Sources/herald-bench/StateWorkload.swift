// The `set` workload: acknowledged retained-value writes against heraldd (Herald only).
#if canImport(Glibc)
import Glibc
#endif

/// Measures acknowledged `set`s per second: one connection keeps `window` sets with a `rid`
/// in flight over `keys` channels and counts the `{"ok":"set"` answers. With a data folder
/// every answer waits for its record to reach the log (and, with fsync `always`, the disk),
/// so this is the throughput of the persistence path, not of fan-out.
func runSetWorkload(_ o: Options) throws -> BenchResult {
    let conn = try Conn.connect(host: o.host, port: o.port)
    defer { conn.closeFD() }
    conn.setReadTimeout(max(o.idle, 5))
    let payload = "\"" + String(repeating: "v", count: max(0, o.size - 2)) + "\""
    let frames: [[UInt8]] = (0..<o.keys).map { k in
        Array(#"{"op":"set","ch":"bench.state.k\#(k)","value":\#(payload),"rid":"#.utf8)
    }
    let bufBytes = 1 << 20
    let buf = UnsafeMutableRawPointer.allocate(byteCount: bufBytes, alignment: 64)
    defer { buf.deallocate() }
    var sent = 0
    var acked = 0
    var refused = 0
    var lineStart = true
    var matched = 0  // bytes of `{"ok":"set"` matched at the start of the current line
    let okPrefix = Array(#"{"ok":"set""#.utf8)
    var out: [UInt8] = []
    out.reserveCapacity(64 << 10)
    func fill() throws {
        out.removeAll(keepingCapacity: true)
        while sent < o.count && sent - acked - refused < o.window && out.count < (60 << 10) {
            out.append(contentsOf: frames[sent % frames.count])
            out.append(contentsOf: String(sent).utf8)
            out.append(contentsOf: "}\n".utf8)
            sent += 1
        }
        if !out.isEmpty { try conn.writeAll(out) }
    }
    // Skip the info line before timing.
    var seenInfo = false
    let start = nowNs()
    try fill()
    while acked + refused < o.count {
        switch conn.read(into: buf, capacity: bufBytes) {
        case .bytes(let n):
            let bytes = buf.assumingMemoryBound(to: UInt8.self)
            for i in 0..<n {
                let byte = bytes[i]
                if byte == 10 {
                    if !seenInfo {
                        seenInfo = true
                    } else if matched == okPrefix.count {
                        acked += 1
                    } else {
                        refused += 1
                    }
                    lineStart = true
                    matched = 0
                    continue
                }
                if lineStart || (matched > 0 && matched < okPrefix.count) {
                    matched = (matched < okPrefix.count && okPrefix[matched] == byte) ? matched + 1 : 0
                    lineStart = false
                }
            }
            try fill()
        case .timeout:
            throw BenchError("no answer for \(o.idle) s after \(acked) acknowledged sets")
        case .eof:
            throw BenchError("connection closed after \(acked) acknowledged sets")
        case .failed(let e):
            throw BenchError("read failed: \(e)")
        }
    }
    let seconds = Double(nowNs() - start) / 1e9
    if refused > 0 { writeStderr("herald-bench: \(refused) sets were refused (error answers)\n") }
    return BenchResult(proto: "herald", workload: "set", subs: 0, size: o.size, count: o.count, expected: o.count,
                       delivered: acked, seconds: seconds, msgsPerSec: seconds > 0 ? Double(acked) / seconds : 0,
                       p50: nil, p99: nil, p999: nil)
}
