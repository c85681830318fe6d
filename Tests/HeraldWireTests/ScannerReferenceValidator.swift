/// A deliberately simple, recursive, independent JSON validator used as a test oracle.
///
/// It shares no code with the scanner, so agreement on random inputs is evidence that both
/// implement RFC 8259 + strict UTF-8 the same way. Slow and recursive: tests only.
struct ScannerReferenceValidator {
    let bytes: [UInt8]
    let maxDepth: Int
    private var i = 0

    init(_ bytes: [UInt8], maxDepth: Int = 64) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// Whether `bytes` is one JSON object, optionally surrounded by whitespace.
    static func accepts(_ bytes: [UInt8], maxDepth: Int = 64) -> Bool {
        guard String(validating: bytes, as: UTF8.self) != nil else { return false }
        var validator = ScannerReferenceValidator(bytes, maxDepth: maxDepth)
        validator.whitespace()
        guard validator.peek == UInt8(ascii: "{"), validator.value(depth: 1) else { return false }
        validator.whitespace()
        return validator.i == bytes.count
    }

    private var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

    private mutating func whitespace() {
        while let b = peek, b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { i += 1 }
    }

    private mutating func consume(_ literal: String) -> Bool {
        for b in literal.utf8 {
            guard peek == b else { return false }
            i += 1
        }
        return true
    }

    private mutating func value(depth: Int) -> Bool {
        whitespace()
        guard let b = peek else { return false }
        switch b {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard depth <= maxDepth else { return false }
            return b == UInt8(ascii: "{") ? object(depth: depth) : array(depth: depth)
        case UInt8(ascii: "\""): return string()
        case UInt8(ascii: "t"): return consume("true")
        case UInt8(ascii: "f"): return consume("false")
        case UInt8(ascii: "n"): return consume("null")
        default: return number()
        }
    }

    private mutating func object(depth: Int) -> Bool {
        i += 1
        whitespace()
        if peek == UInt8(ascii: "}") { i += 1; return true }
        while true {
            whitespace()
            guard peek == UInt8(ascii: "\""), string() else { return false }
            whitespace()
            guard consume(":"), value(depth: depth + 1) else { return false }
            whitespace()
            if consume("}") { return true }
            guard consume(",") else { return false }
        }
    }

    private mutating func array(depth: Int) -> Bool {
        i += 1
        whitespace()
        if peek == UInt8(ascii: "]") { i += 1; return true }
        while true {
            guard value(depth: depth + 1) else { return false }
            whitespace()
            if consume("]") { return true }
            guard consume(",") else { return false }
        }
    }

    private mutating func string() -> Bool {
        i += 1
        var pendingHigh = false
        while let b = peek {
            i += 1
            if b == UInt8(ascii: "\"") { return !pendingHigh }
            if b < 0x20 { return false }
            if b != UInt8(ascii: "\\") {
                if pendingHigh { return false }
                continue
            }
            guard let e = peek else { return false }
            i += 1
            if e == UInt8(ascii: "u") {
                guard i + 4 <= bytes.count, let unit = UInt32(String(decoding: bytes[i..<i + 4], as: UTF8.self), radix: 16),
                      bytes[i..<i + 4].allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "-") })
                else { return false }
                i += 4
                let isHigh = (0xD800...0xDBFF).contains(unit)
                let isLow = (0xDC00...0xDFFF).contains(unit)
                if pendingHigh != isLow { return false }
                pendingHigh = isHigh
            } else {
                guard Array(#""\/bfnrt"#.utf8).contains(e), !pendingHigh else { return false }
            }
        }
        return false
    }

    private mutating func number() -> Bool {
        _ = consume("-")
        guard let first = peek, (0x30...0x39).contains(first) else { return false }
        i += 1
        if first != UInt8(ascii: "0") { digits() }
        if consume(".") {
            guard let d = peek, (0x30...0x39).contains(d) else { return false }
            digits()
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            i += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { i += 1 }
            guard let d = peek, (0x30...0x39).contains(d) else { return false }
            digits()
        }
        return true
    }

    private mutating func digits() {
        while let d = peek, (0x30...0x39).contains(d) { i += 1 }
    }
}
