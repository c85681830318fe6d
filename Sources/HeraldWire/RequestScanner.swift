/// Validates one request line and records where its known top-level fields sit.
///
/// Why a scanner instead of a JSON decoder: the broker's hot path reads a handful of small
/// fields per message and forwards `data` verbatim, so the line is validated in one pass
/// and only byte spans are kept; nothing is decoded until an accessor asks for it.
///
/// One scanner serves one connection and is reused for every line. All storage (field
/// spans, the nesting stack, the escape-decoding buffer) is allocated in `init`, so a scan
/// allocates nothing; only decoding an escaped string longer than any seen before grows
/// the decoding buffer.
///
/// Lifetime: `scan(_:)` keeps the line's base pointer until the next `scan(_:)`. The
/// subscript's spans stay meaningful, but `raw(_:)`, `string(_:)`, `withString(_:_:)`,
/// `int(_:)` and `bool(_:)` read the line's memory, so call them only while the buffer
/// passed to `scan(_:)` is still alive and unchanged. After a failed scan every field is absent.
///
/// Not thread-safe: confine each scanner to the connection's event loop.
///
/// Its stored properties are `@exclusivity(unchecked)`: the scanner is used by one thread
/// and never passes them `inout` to anything that could reach them again, and the dynamic
/// check cost one `swift_beginAccess` per scanned line (85 instructions, 3 % of a 1→1
/// publish; issue 16). `HeraldWire` is linked by the client library, so it cannot take the
/// daemon's module-wide `-enforce-exclusivity=unchecked`.
public final class RequestScanner {
    /// The deepest nesting accepted; the top-level object is level 1.
    let maxDepth: Int
    /// Per-field spans indexed by `RequestField.rawValue`; meaningful only where `presence` has the bit set.
    @usableFromInline let values: UnsafeMutablePointer<ScannedValue>
    /// One bit per `RequestField.rawValue`: set when the last scanned line holds that key.
    @usableFromInline @exclusivity(unchecked) var presence: UInt64 = 0
    /// The last successfully scanned line; nil before the first scan and after a failed one.
    @usableFromInline @exclusivity(unchecked) var line: JSONInput?
    /// Whether each open container is an object (true) or array (false), indexed by depth.
    let containerStack: UnsafeMutablePointer<Bool>
    /// Reused destination for decoding strings that contain escapes.
    @exclusivity(unchecked) var decodeBuffer: UnsafeMutableRawPointer
    /// The byte capacity of `decodeBuffer`.
    @exclusivity(unchecked) var decodeCapacity: Int
    /// Set while a `withString` body holds `decodeBuffer`, so a nested call decodes elsewhere.
    @exclusivity(unchecked) var decodeBufferInUse = false
    /// Whether the last successful scan matched the canonical `pub` shape (`RequestScanner+CanonicalPub`),
    /// so the op is known to be `pub` without looking it up.
    @exclusivity(unchecked) public private(set) var isCanonicalPub = false
    /// Key lookup shared by all scanners.
    let keys = RequestKeyTable.shared

    /// Creates a scanner with all its storage preallocated.
    ///
    /// Why a depth limit: the scanner is iterative, so depth costs no stack, but a limit bounds
    /// the nesting stack and keeps pathological frames (`[[[[…`) from reaching subscribers.
    /// - Parameter maxDepth: the deepest nesting accepted, counting the top-level object as
    ///   level 1 (so `{"data":[…]}` nests 2 deep); must be at least 1.
    public init(maxDepth: Int = 64) {
        precondition(maxDepth >= 1, "maxDepth must be at least 1")
        precondition(RequestField.allCases.count <= UInt64.bitWidth, "presence bits must fit one word")
        self.maxDepth = maxDepth
        let fieldCount = RequestField.allCases.count
        values = .allocate(capacity: fieldCount)
        values.initialize(repeating: ScannedValue(kind: .null, start: 0, end: 0), count: fieldCount)
        containerStack = .allocate(capacity: maxDepth + 1)
        containerStack.initialize(repeating: false, count: maxDepth + 1)
        decodeCapacity = 256
        decodeBuffer = .allocate(byteCount: decodeCapacity, alignment: 1)
    }

    deinit {
        values.deinitialize(count: RequestField.allCases.count)
        values.deallocate()
        containerStack.deinitialize(count: maxDepth + 1)
        containerStack.deallocate()
        decodeBuffer.deallocate()
    }

    /// Validates `line` as exactly one JSON object and records its known top-level fields.
    ///
    /// A canonical `pub` line is read by a shorter fast path first (`scanCanonicalPub`); any
    /// other line, or one the fast path gives up on, is read by the general state machine.
    /// Both record the same spans, so the result does not depend on which one read it.
    ///
    /// Strict RFC 8259 (no comments, trailing commas, NaN/Infinity, leading zeros, single
    /// quotes or raw control characters in strings; `\u` escapes must be valid and
    /// surrogates paired), valid UTF-8 throughout (no overlongs, UTF-8-encoded surrogates,
    /// scalars above U+10FFFF or truncated sequences), nesting at most `maxDepth` deep, and
    /// optional space, tab, CR or LF around tokens. Keys that are `RequestField` spellings
    /// (after resolving escapes) are recorded; other keys are validated and ignored. Only
    /// known keys are checked for duplicates, since tracking arbitrary keys would cost an
    /// allocation per scan.
    /// - Parameter line: one request line; a trailing `\r` or `\n` is accepted as whitespace.
    ///   It must stay alive and unchanged while this scanner's accessors are used, up to the
    ///   next `scan(_:)`.
    /// - Throws: `HeraldError(.badJSON, message)`: "request must be a JSON object",
    ///   "invalid JSON at byte N: …" (offsets are 0-based), "invalid UTF-8 at byte N",
    ///   "nesting deeper than N" or "duplicate key \"ch\"".
    public func scan(_ line: UnsafeRawBufferPointer) throws(HeraldError) {
        presence = 0
        self.line = nil
        isCanonicalPub = false
        guard let base = line.baseAddress else { throw .syntax(at: 0, "empty request") }
        let input = JSONInput(base: base, count: line.count)
        if let fast = scanCanonicalPub(input) {
            presence = fast
            isCanonicalPub = true
        } else {
            presence = try scanObject(input)
        }
        self.line = input
    }

    /// A copy of the last scanned line (empty before any): kept by a request that must run
    /// again later (a cluster `lease` call), as the line's own buffer is the reader's.
    public var lineCopy: [UInt8] {
        guard let line else { return [] }
        return Array(UnsafeRawBufferPointer(start: line.base, count: line.count))
    }

    /// The span of `field` in the last scanned line, or nil when the line lacks it.
    ///
    /// Unlike the typed accessors this reports a JSON `null` as a value of kind `.null`,
    /// for handlers that must tell `"x":null` from a missing key.
    /// - Parameter field: the top-level field.
    /// - Returns: the recorded span, or nil.
    // The subscript, `raw`, `isPresent` and `unescapedString` are `@inlinable`: the broker
    // calls them on every publish, and as calls into this module they were ~100 instructions
    // of a 1→1 publish (callgrind).
    @inlinable @inline(__always)
    public subscript(field: RequestField) -> ScannedValue? {
        guard presence & (1 &<< UInt64(field.rawValue)) != 0 else { return nil }
        return values[field.rawValue]
    }

    /// The raw JSON bytes of `field` (strings include their quotes), for forwarding `data` verbatim.
    ///
    /// The buffer points into the scanned line: it is valid only while that line's memory is,
    /// and only until the next `scan(_:)`.
    /// - Parameter field: the top-level field.
    /// - Returns: the value's bytes (`null` included), or nil when the field is absent.
    @inlinable @inline(__always)
    public func raw(_ field: RequestField) -> UnsafeRawBufferPointer? {
        guard let value = self[field], let line else { return nil }
        return UnsafeRawBufferPointer(start: line.base + value.start, count: value.end - value.start)
    }

    /// Whether the line holds `field` at all, `null` included: one bit test, inlined, for a
    /// check on the publish path that must cost nothing when the field is absent.
    @inlinable
    public func holds(_ field: RequestField) -> Bool {
        presence & (1 &<< UInt64(field.rawValue)) != 0
    }

    /// Whether `field` holds a non-null value in the last scanned line.
    ///
    /// `null` counts as absent, matching the typed accessors, so `"rid":null` behaves like
    /// no `rid` at all; use the subscript to tell the two apart.
    /// - Parameter field: the top-level field.
    /// - Returns: true when the field is present and not `null`.
    @inlinable @inline(__always)
    public func isPresent(_ field: RequestField) -> Bool {
        guard let value = self[field] else { return false }
        return value.kind != .null
    }

    /// The contents of a string field without escapes (no quotes), as a slice of the line,
    /// for a hot path that must not pay for `withString`'s generic call.
    ///
    /// Valid only while the line's memory is, and only until the next `scan(_:)`.
    /// - Parameter field: the top-level field.
    /// - Returns: the bytes, or nil when the field is absent, `null`, not a string, or holds
    ///   an escape (then `withString` decodes it, or throws the type error).
    @inlinable @inline(__always)
    public func unescapedString(_ field: RequestField) -> UnsafeRawBufferPointer? {
        guard let value = self[field], value.kind == .string, !value.hasEscapes, let line else { return nil }
        return UnsafeRawBufferPointer(start: line.base + (value.start &+ 1), count: value.end &- value.start &- 2)
    }

    /// The field's span when it is present and not `null`; the common prelude of the typed accessors.
    @inline(__always)
    func nonNullValue(_ field: RequestField) -> (value: ScannedValue, line: JSONInput)? {
        guard let value = self[field], value.kind != .null, let line else { return nil }
        return (value, line)
    }
}
