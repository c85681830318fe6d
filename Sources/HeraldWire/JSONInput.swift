/// A read-only view of the bytes of one request line, indexed by byte offset.
///
/// Reads go through `UnsafeRawPointer.load` rather than a typed `UInt8` pointer so the scanner
/// never assumes how the caller's buffer is bound; every load is inlined to a plain byte read.
/// Callers check `index < count` before reading; the type itself does no bounds checking
/// because it sits on the per-message hot path.
@usableFromInline
struct JSONInput {
    /// The first byte of the line.
    @usableFromInline let base: UnsafeRawPointer
    /// The number of bytes in the line.
    @usableFromInline let count: Int

    /// The byte at `index`, which must be in `0..<count`.
    @inline(__always)
    subscript(index: Int) -> UInt8 {
        base.load(fromByteOffset: index, as: UInt8.self)
    }

    /// Sixteen bytes starting at `index` as a vector; `index + 16` must be `<= count`.
    @inline(__always)
    func vector(at index: Int) -> SIMD16<UInt8> {
        base.loadUnaligned(fromByteOffset: index, as: SIMD16<UInt8>.self)
    }

    /// Eight bytes starting at `index` as a little-endian word; `index + 8` must be `<= count`.
    ///
    /// Used by the string scanner to classify eight ASCII bytes per step.
    @inline(__always)
    func word(at index: Int) -> UInt64 {
        UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
    }
}

/// ASCII byte constants the scanner compares against.
enum ASCII {
    static let quote: UInt8 = 0x22  // "
    static let backslash: UInt8 = 0x5C  // \
    static let slash: UInt8 = 0x2F  // /
    static let comma: UInt8 = 0x2C  // ,
    static let colon: UInt8 = 0x3A  // :
    static let openBrace: UInt8 = 0x7B  // {
    static let closeBrace: UInt8 = 0x7D  // }
    static let openBracket: UInt8 = 0x5B  // [
    static let closeBracket: UInt8 = 0x5D  // ]
    static let minus: UInt8 = 0x2D  // -
    static let plus: UInt8 = 0x2B  // +
    static let dot: UInt8 = 0x2E  // .
    static let zero: UInt8 = 0x30  // 0
    static let nine: UInt8 = 0x39  // 9
    static let lowerE: UInt8 = 0x65  // e
    static let upperE: UInt8 = 0x45  // E
    static let lowerT: UInt8 = 0x74  // t
    static let lowerF: UInt8 = 0x66  // f
    static let lowerN: UInt8 = 0x6E  // n
    static let lowerU: UInt8 = 0x75  // u
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let lineFeed: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D

    /// Whether `byte` is one of the four whitespace bytes RFC 8259 allows between tokens.
    @inline(__always)
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == space || byte == lineFeed || byte == carriageReturn || byte == tab
    }

    /// Whether `byte` is an ASCII decimal digit.
    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool {
        byte &- zero < 10
    }

    /// The value of an ASCII hex digit, or nil for any other byte.
    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case 0x30...0x39: return UInt32(byte &- 0x30)
        case 0x41...0x46: return UInt32(byte &- 0x41 &+ 10)
        case 0x61...0x66: return UInt32(byte &- 0x61 &+ 10)
        default: return nil
        }
    }
}
