/// Where an `event` frame's fields are, found in one pass over the frame's fields.
///
/// Why: building an `IncomingEvent` asked the frame for fifteen fields one by one, each a
/// scan of every field after packing the wanted key; one pass that switches on the packed
/// keys finds them all at once. The first occurrence of a repeated key wins, as with
/// `ServerFrame.range(_:)`.
struct EventFields {
    // Each range packed into one word (start in the high half, end in the low half; 0 for
    // absent: a value never ends at offset 0). With sixteen `Range<Int>?` (384 bytes) the
    // struct was copied with `memmove` on the way out of every read.
    private var eventSpan: UInt64 = 0
    private var subSpan: UInt64 = 0
    private var fromSpan: UInt64 = 0
    private var seqSpan: UInt64 = 0
    private var argsSpan: UInt64 = 0
    private var lastSpan: UInt64 = 0
    private var droppedSpan: UInt64 = 0
    private var replaySpan: UInt64 = 0
    private var kindSpan: UInt64 = 0
    private var revSpan: UInt64 = 0
    private var replySpan: UInt64 = 0
    private var indexSpan: UInt64 = 0
    private var removeSpan: UInt64 = 0
    private var insertSpan: UInt64 = 0
    private var dataSpan: UInt64 = 0
    private var valueSpan: UInt64 = 0

    var event: Range<Int>? { Self.range(eventSpan) }
    var sub: Range<Int>? { Self.range(subSpan) }
    var from: Range<Int>? { Self.range(fromSpan) }
    var seq: Range<Int>? { Self.range(seqSpan) }
    var args: Range<Int>? { Self.range(argsSpan) }
    var last: Range<Int>? { Self.range(lastSpan) }
    var dropped: Range<Int>? { Self.range(droppedSpan) }
    var replay: Range<Int>? { Self.range(replaySpan) }
    var kind: Range<Int>? { Self.range(kindSpan) }
    var rev: Range<Int>? { Self.range(revSpan) }
    var reply: Range<Int>? { Self.range(replySpan) }
    var index: Range<Int>? { Self.range(indexSpan) }
    var remove: Range<Int>? { Self.range(removeSpan) }
    var insert: Range<Int>? { Self.range(insertSpan) }
    var data: Range<Int>? { Self.range(dataSpan) }
    var value: Range<Int>? { Self.range(valueSpan) }

    /// The range packed in `span`; nil when absent.
    private static func range(_ span: UInt64) -> Range<Int>? {
        span == 0 ? nil : Int(span >> 32)..<Int(span & 0xFFFF_FFFF)
    }

    /// Finds the fields of `frame` (every event key is short and plain, so packed).
    init(_ frame: ServerFrame) {
        guard UInt64(frame.bytes.count) <= UInt64(UInt32.max) else { return }
        for field in frame.fields {
            record(field.key.packed, field.range)
        }
    }

    /// Reads an `event` frame straight from the line's bytes (the read buffer), with no copy
    /// of the line and no list of its fields.
    ///
    /// Why: on the event path the line was copied into an array, split into an array of
    /// fields, and scanned again for these ranges: two allocations and two passes per event.
    /// - Parameter line: one line from the daemon.
    /// - Returns: nil when the line is not one JSON object (as `ServerFrame` reads it) whose
    ///   first key is a plain `event`; the caller then takes the general path, which reports
    ///   or handles it as before.
    init?(line: UnsafeRawBufferPointer) {
        guard UInt64(line.count) <= UInt64(UInt32.max) else { return nil }
        if let canonical = Self.canonical(line) {
            self = canonical
            return
        }
        var fields = EventFields()
        var isEvent: Bool?
        var cursor = JSONCursor(bytes: line)
        // `data` is the last field of every daemon frame (docs/protocol.md): not walked.
        let wellFormed = cursor.forEachTopLevelField(last: Keys.data) { key, range in
            if isEvent == nil { isEvent = key.packed == Keys.event }
            fields.record(key.packed, range)
        }
        guard wellFormed, isEvent == true else { return nil }
        self = fields
    }

    private init() {}

    /// The daemon's usual event frame, `{"event":"CH","sub":"S"[,"seq":N][,"from":"C"][,"data":D]}`
    /// with plain strings (no escapes) and no spaces, read by matching its literal parts;
    /// nil for anything else, which the field-by-field walk then reads.
    ///
    /// Why: the walk packs and switches on every key and skips every value; for this shape
    /// (nearly every event) the keys are known in order, so each field costs a compare of its
    /// key's bytes and a scan to the next quote.
    private static func canonical(_ line: UnsafeRawBufferPointer) -> EventFields? {
        var reader = LiteralReader(bytes: line)
        var fields = EventFields()
        guard reader.take(Literals.event), let event = reader.plainString() else { return nil }
        fields.eventSpan = span(event)
        guard reader.take(Literals.sub), let sub = reader.plainString() else { return nil }
        fields.subSpan = span(sub)
        if reader.take(Literals.seq) {
            guard let seq = reader.digits() else { return nil }
            fields.seqSpan = span(seq)
        }
        if reader.take(Literals.from) {
            guard let from = reader.plainString() else { return nil }
            fields.fromSpan = span(from)
        }
        if reader.take(Literals.data) {
            var cursor = JSONCursor(bytes: line)
            cursor.index = reader.index
            guard let end = cursor.lastValueEnd() else { return nil }
            fields.dataSpan = span(reader.index..<end)
            return fields
        }
        return reader.index + 1 == line.count && line[reader.index] == UInt8(ascii: "}") ? fields : nil
    }

    private static func span(_ range: Range<Int>) -> UInt64 {
        UInt64(truncatingIfNeeded: range.lowerBound) << 32 | UInt64(truncatingIfNeeded: range.upperBound)
    }

    /// The literal parts of the canonical frame.
    private enum Literals {
        static let event = Literal(#"{"event":"#)
        static let sub = Literal(#","sub":"#)
        static let seq = Literal(#","seq":"#)
        static let from = Literal(#","from":"#)
        static let data = Literal(#","data":"#)
    }

    /// Notes one field: the first occurrence of a known key wins. Only called with ranges of
    /// lines shorter than 4 GiB (`init?(line:)` checks; a daemon frame never comes close).
    private mutating func record(_ packed: UInt64?, _ range: Range<Int>) {
        guard let key = packed else { return }
        let span = Self.span(range)
        switch key {
        case Keys.event: if eventSpan == 0 { eventSpan = span }
        case Keys.sub: if subSpan == 0 { subSpan = span }
        case Keys.from: if fromSpan == 0 { fromSpan = span }
        case Keys.seq: if seqSpan == 0 { seqSpan = span }
        case Keys.args: if argsSpan == 0 { argsSpan = span }
        case Keys.last: if lastSpan == 0 { lastSpan = span }
        case Keys.dropped: if droppedSpan == 0 { droppedSpan = span }
        case Keys.replay: if replaySpan == 0 { replaySpan = span }
        case Keys.kind: if kindSpan == 0 { kindSpan = span }
        case Keys.rev: if revSpan == 0 { revSpan = span }
        case Keys.reply: if replySpan == 0 { replySpan = span }
        case Keys.index: if indexSpan == 0 { indexSpan = span }
        case Keys.remove: if removeSpan == 0 { removeSpan = span }
        case Keys.insert: if insertSpan == 0 { insertSpan = span }
        case Keys.data: if dataSpan == 0 { dataSpan = span }
        case Keys.value: if valueSpan == 0 { valueSpan = span }
        default: break
        }
    }

    /// The packed form (`FieldKey.packed`) of each key, as literals: computed statics cost a
    /// `swift_once` check per comparison in the switch above (`EventFieldsTests` checks them).
    enum Keys {
        static let event: UInt64 = 0x050000746E657665 // "event"
        static let sub: UInt64 = 0x0300000000627573 // "sub"
        static let from: UInt64 = 0x040000006D6F7266 // "from"
        static let seq: UInt64 = 0x0300000000716573 // "seq"
        static let args: UInt64 = 0x0400000073677261 // "args"
        static let last: UInt64 = 0x040000007473616C // "last"
        static let dropped: UInt64 = 0x07646570706F7264 // "dropped"
        static let replay: UInt64 = 0x060079616C706572 // "replay"
        static let kind: UInt64 = 0x04000000646E696B // "kind"
        static let rev: UInt64 = 0x0300000000766572 // "rev"
        static let reply: UInt64 = 0x050000796C706572 // "reply"
        static let index: UInt64 = 0x0500007865646E69 // "index"
        static let remove: UInt64 = 0x060065766F6D6572 // "remove"
        static let insert: UInt64 = 0x0600747265736E69 // "insert"
        static let data: UInt64 = 0x0400000061746164 // "data"
        static let value: UInt64 = 0x05000065756C6176 // "value"

        /// Every key and its text, for the test.
        static let all: [(packed: UInt64, name: String)] = [
            (event, "event"),
            (sub, "sub"),
            (from, "from"),
            (seq, "seq"),
            (args, "args"),
            (last, "last"),
            (dropped, "dropped"),
            (replay, "replay"),
            (kind, "kind"),
            (rev, "rev"),
            (reply, "reply"),
            (index, "index"),
            (remove, "remove"),
            (insert, "insert"),
            (data, "data"),
            (value, "value")
        ]
    }
}

/// A literal of 1 to 16 bytes as its first (up to) 8 bytes and, past 8, its last 8
/// (`LiteralReader.take`).
struct Literal {
    let count: Int
    let head: UInt64
    let headMask: UInt64
    let tail: UInt64

    init(_ text: StaticString) {
        let bytes = UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        // Only this file's own constants come here (`EventFields.Literals`), never peer input.
        assert((1...16).contains(bytes.count), "a literal of 1 to 16 bytes")
        count = bytes.count
        var head: UInt64 = 0
        for (offset, byte) in bytes.prefix(8).enumerated() { head |= UInt64(byte) << (8 * UInt64(offset)) }
        self.head = head
        headMask = bytes.count >= 8 ? ~0 : (1 << (8 * UInt64(bytes.count))) - 1
        tail = bytes.count > 8 ? UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self)) : 0
    }
}

/// Reads a line by matching literal bytes and plain tokens (`EventFields.canonical`).
private struct LiteralReader {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    /// Moves past `literal` when the bytes at `index` are exactly it.
    ///
    /// One or two 8-byte loads, no call to `memcmp` (a tenth of the canonical read). Fewer
    /// than 8 bytes left never match: a canonical frame has a value and `}` after each literal.
    mutating func take(_ literal: Literal) -> Bool {
        guard index + max(8, literal.count) <= bytes.count else { return false }
        let head = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
        guard head & literal.headMask == literal.head else { return false }
        if literal.count > 8 {
            let tail = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index + literal.count - 8, as: UInt64.self))
            guard tail == literal.tail else { return false }
        }
        index += literal.count
        return true
    }

    /// A string with no escape at `index` (its opening quote): its range, quotes included.
    mutating func plainString() -> Range<Int>? {
        let start = index
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "\"") { return start..<index }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
        }
        return nil
    }

    /// One or more ASCII digits (a `seq` is never negative): their range.
    mutating func digits() -> Range<Int>? {
        let start = index
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
        return index > start && index - start <= 18 ? start..<index : nil
    }
}
