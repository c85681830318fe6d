#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock milliseconds since 1970, for `ping`/`pong` payloads (timing uses `uv_now`).
@Sendable func wallClockMilliseconds() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int(now.tv_sec) * 1000 + Int(now.tv_nsec) / 1_000_000
}

/// A fresh random epoch name: 16 hex digits, new at every start.
func makeEpoch() -> String {
    var generator = SystemRandomNumberGenerator()
    let value = generator.next() as UInt64
    let hex = String(value, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
}
