/// Where an `event` frame's fields are, found in one pass over the frame's fields.
///
/// Why: building an `IncomingEvent` asked the frame for fifteen fields one by one, each a
/// scan of every field after packing the wanted key; one pass that switches on the packed
/// keys finds them all at once. The first occurrence of a repeated key wins, as with
/// `ServerFrame.range(_:)`.
struct EventFields {
    var event: Range<Int>?
    var sub: Range<Int>?
    var from: Range<Int>?
    var seq: Range<Int>?
    var args: Range<Int>?
    var last: Range<Int>?
    var dropped: Range<Int>?
    var replay: Range<Int>?
    var kind: Range<Int>?
    var rev: Range<Int>?
    var reply: Range<Int>?
    var index: Range<Int>?
    var remove: Range<Int>?
    var insert: Range<Int>?
    var data: Range<Int>?
    var value: Range<Int>?

    /// Finds the fields of `frame` (every event key is short and plain, so packed).
    init(_ frame: ServerFrame) {
        for field in frame.fields {
            guard let key = field.key.packed else { continue }
            let range = field.range
            switch key {
            case Keys.event: if event == nil { event = range }
            case Keys.sub: if sub == nil { sub = range }
            case Keys.from: if from == nil { from = range }
            case Keys.seq: if seq == nil { seq = range }
            case Keys.args: if args == nil { args = range }
            case Keys.last: if last == nil { last = range }
            case Keys.dropped: if dropped == nil { dropped = range }
            case Keys.replay: if replay == nil { replay = range }
            case Keys.kind: if kind == nil { kind = range }
            case Keys.rev: if rev == nil { rev = range }
            case Keys.reply: if reply == nil { reply = range }
            case Keys.index: if index == nil { index = range }
            case Keys.remove: if remove == nil { remove = range }
            case Keys.insert: if insert == nil { insert = range }
            case Keys.data: if data == nil { data = range }
            case Keys.value: if value == nil { value = range }
            default: break
            }
        }
    }

    /// The packed form (`FieldKey`) of each key, computed once.
    private enum Keys {
        static let event = pack("event")
        static let sub = pack("sub")
        static let from = pack("from")
        static let seq = pack("seq")
        static let args = pack("args")
        static let last = pack("last")
        static let dropped = pack("dropped")
        static let replay = pack("replay")
        static let kind = pack("kind")
        static let rev = pack("rev")
        static let reply = pack("reply")
        static let index = pack("index")
        static let remove = pack("remove")
        static let insert = pack("insert")
        static let data = pack("data")
        static let value = pack("value")

        /// A key of at most 7 plain bytes, packed.
        private static func pack(_ key: String) -> UInt64 {
            guard let packed = FieldKey.packed(Array(key.utf8)) else { preconditionFailure("event keys are at most 7 bytes") }
            return packed
        }
    }
}
