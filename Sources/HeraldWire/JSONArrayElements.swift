/// Splits a JSON array into its top-level elements as byte ranges, without decoding them.
///
/// Why: retained lists keep each element as the raw bytes the client sent, so a `set` with
/// an array or a `splice` with `insert` must find where each element starts and ends. The
/// request scanner has already validated the line, so this walk only tracks strings and
/// nesting; it still refuses structurally broken input (returns nil) rather than trusting
/// it, because records read back from disk take the same path.
public enum JSONArrayElements {
    /// The byte ranges of the top-level elements of `array`, whitespace trimmed.
    /// - Parameter array: one JSON array, e.g. `[1, {"a":[2]}, "x"]`; surrounding
    ///   whitespace is allowed.
    /// - Returns: one range per element (relative to `array`), or nil when `array` is not a
    ///   well-nested JSON array.
    public static func ranges(of array: UnsafeRawBufferPointer) -> [Range<Int>]? {
        var i = skipSpace(array, 0)
        guard i < array.count, array[i] == UInt8(ascii: "[") else { return nil }
        i += 1
        var result: [Range<Int>] = []
        i = skipSpace(array, i)
        if i < array.count, array[i] == UInt8(ascii: "]") {
            return skipSpace(array, i + 1) == array.count ? result : nil
        }
        while true {
            let start = skipSpace(array, i)
            guard let end = elementEnd(array, from: start), end > start else { return nil }
            result.append(start..<end)
            i = skipSpace(array, end)
            guard i < array.count else { return nil }
            if array[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            guard array[i] == UInt8(ascii: "]") else { return nil }
            return skipSpace(array, i + 1) == array.count ? result : nil
        }
    }

    /// The elements of `array` as separate byte arrays; nil as for ``ranges(of:)``.
    /// - Parameter array: one JSON array.
    /// - Returns: each element's bytes, or nil when `array` is not a well-nested JSON array.
    public static func elements(of array: UnsafeRawBufferPointer) -> [[UInt8]]? {
        guard let ranges = ranges(of: array) else { return nil }
        return ranges.map { Array(UnsafeRawBufferPointer(rebasing: array[$0])) }
    }

    /// Where the element starting at `start` ends: at the first `,` or `]` outside strings
    /// and nested containers, with trailing whitespace excluded.
    private static func elementEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var depth = 0
        var inString = false
        var escaped = false
        var i = start
        var lastSignificant = start
        while i < bytes.count {
            let byte = bytes[i]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    lastSignificant = i + 1
                }
                i += 1
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if depth == 0 { return byte == UInt8(ascii: "]") ? lastSignificant : nil }
                depth -= 1
                lastSignificant = i + 1
            case UInt8(ascii: ","):
                if depth == 0 { return lastSignificant }
            case 0x20, 0x09, 0x0A, 0x0D:
                break
            default:
                lastSignificant = i + 1
            }
            i += 1
        }
        return nil
    }

    private static func skipSpace(_ bytes: UnsafeRawBufferPointer, _ from: Int) -> Int {
        var i = from
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return i
            }
        }
        return i
    }
}
