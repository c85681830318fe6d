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
