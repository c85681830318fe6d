/// Writes non-negative integers as ASCII decimal digits, two digits per step from a table.
///
/// Shared by `[UInt8].appendInt` and the broker's frame scratch, which writes `seq` into every
/// event frame (issue 16: formatting it a digit at a time through a temporary was ~130
/// instructions per publish). Both functions are `@inlinable` so the broker's frame scratch
/// inlines them: called across the module boundary they cost ~40 instructions a publish more
/// (callgrind, 1→1 16 B).
public enum DecimalDigits {
    /// How many digits `value` has (1 for 0).
    @inlinable @inline(__always)
    public static func count(_ value: UInt) -> Int {
        var n = 1
        var rest = value
        while rest >= 100 {
            rest /= 100
            n &+= 2
        }
        return rest >= 10 ? n &+ 1 : n
    }

    /// Writes the digits of `value` so that the last one is just before `end`; the caller
    /// has made room for `count(value)` bytes there.
    @inlinable @inline(__always)
    public static func write(_ value: UInt, endingAt end: UnsafeMutablePointer<UInt8>) {
        var at = end
        var rest = value
        let pairs = JSONOutputTables.digitPairs
        while rest >= 100 {
            let pair = Int(rest % 100) &* 2
            rest /= 100
            at -= 2
            at[0] = pairs[pair]
            at[1] = pairs[pair &+ 1]
        }
        if rest >= 10 {
            let pair = Int(rest) &* 2
            at -= 2
            at[0] = pairs[pair]
            at[1] = pairs[pair &+ 1]
        } else {
            at -= 1
            at[0] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest)
        }
    }
}
