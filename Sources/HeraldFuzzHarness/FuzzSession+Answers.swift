import HeraldBroker
import HeraldWire

/// Answers the harness can predict from the broker's tables (issue 12's listing rules).
///
/// `channels`: a page lists at most `limit` names, in byte order, exactly the first names
/// after `after` that match `ch` (every non-`$` name without it); without `next` it lists
/// all of them, with `next` every matching name up to `next` is on the page and `next` is
/// past `after`, so paging never skips or repeats a name and always moves on. An entry shows
/// an owner only with `owned:true` and only to the owner's own user or a `$sys.>` reader,
/// and a link target only to a user that may subscribe to it. `lock {ch}`/`unlock {ch}`
/// list at most `budgets.lockList` subscriptions.
extension FuzzSession {
    /// What the answer to a request must satisfy, worked out before the broker sees it.
    enum Expectation {
        case channels(names: [[UInt8]], limit: Int, after: [UInt8]?, viewer: AuthUser?)
        case lockList(op: [UInt8], cap: Int)
    }

    /// The expectation for a request line, when it is one the harness checks.
    func expectation(for line: UnsafeRawBufferPointer, from session: Session) -> Expectation? {
        do throws(HeraldError) {
            try requestReader.scan(line)
            guard let op = try requestReader.string(.op) else { return nil }
            switch op {
            case Array("channels".utf8):
                let pattern = try requestReader.string(.ch)
                let limit = try requestReader.int(.limit) ?? 100
                guard (1...1_000).contains(limit) else { return nil }
                let after = try requestReader.string(.after)
                let names = broker.directoryListing().filter { name in
                    let listed = pattern.map { ChannelName.matches(pattern: $0, channel: name) } ?? !ChannelName.isReserved(name)
                    return listed && (after.map { $0.lexicographicallyPrecedes(name) } ?? true)
                }
                return .channels(names: names, limit: limit, after: after, viewer: session.user)
            case Array("lock".utf8), Array("unlock".utf8):
                guard requestReader.isPresent(.ch), !requestReader.isPresent(.subs), !requestReader.isPresent(.sub) else { return nil }
                return .lockList(op: op, cap: broker.budgets.lockList)
            default:
                return nil
            }
        } catch {
            return nil
        }
    }

    /// Finds the `ok` answer among the frames queued since `before` and checks it.
    mutating func check(_ expectation: Expectation, answeredTo session: Session, after before: Int) {
        guard session.outbound.count >= before else { return }  // cut as a slow consumer meanwhile
        let queued = session.outbound[before...]
        let prefix: [UInt8]
        switch expectation {
        case .channels: prefix = Array(#"{"ok":"channels""#.utf8)
        case .lockList(let op, _): prefix = Array(#"{"ok":""#.utf8) + op + [UInt8(ascii: "\"")]
        }
        for frame in queued.split(separator: UInt8(ascii: "\n")) where frame.starts(with: prefix) {
            let bytes = Array(frame)
            switch expectation {
            case let .channels(names, limit, after, viewer):
                checkChannelsPage(bytes, names: names, limit: limit, after: after, viewer: viewer)
            case let .lockList(_, cap):
                guard let subs = Self.stringArray(after: Array(#","subs":["#.utf8), in: bytes) else {
                    violations.append("lock: answer without a subs list: " + String(decoding: bytes.prefix(300), as: UTF8.self))
                    return
                }
                if subs > cap { violations.append("lock: answer lists \(subs) subscriptions, past the cap \(cap)") }
            }
            return
        }
    }

    private mutating func checkChannelsPage(_ frame: [UInt8], names expected: [[UInt8]], limit: Int,
                                            after: [UInt8]?, viewer: AuthUser?) {
        let text = { (name: [UInt8]) in String(decoding: name, as: UTF8.self) }
        guard let page = ChannelsPage(frame) else {
            violations.append("channels: answer not in the documented shape: " + String(decoding: frame.prefix(300), as: UTF8.self))
            return
        }
        let listed = page.entries.map(\.name)
        if listed.count > limit { violations.append("channels: \(listed.count) entries on a page of limit \(limit)") }
        if listed != Array(expected.prefix(listed.count)) {
            violations.append("channels: page \(listed.map(text)) is not the first names of \(expected.map(text)) (after \(after.map(text) ?? "-"))")
        }
        if let next = page.next {
            let upToNext = expected.filter { !next.lexicographicallyPrecedes($0) }
            if upToNext != listed {
                violations.append("channels: next \(text(next)) skips names: page \(listed.map(text)), names up to it \(upToNext.map(text))")
            }
            if let after, !after.lexicographicallyPrecedes(next) {
                violations.append("channels: next \(text(next)) does not move past after \(text(after))")
            }
        } else if listed.count != expected.count {
            violations.append("channels: page of \(listed.count) without next, \(expected.count) names match")
        }
        for entry in page.entries {
            if let owner = entry.owner {
                if !entry.owned { violations.append("channels: \(text(entry.name)) shows owner \(text(owner)) with owned:false") }
                if let viewer, !mayIdentify(owner: owner, to: viewer) {
                    violations.append("channels: \(viewer.name) was shown \(text(owner)), owner of \(text(entry.name))")
                }
            }
            if let link = entry.link, let viewer, !link.withUnsafeBytes({ viewer.subscribe.permits(channel: $0) }) {
                violations.append("channels: \(viewer.name) was shown link target \(text(link)) it may not subscribe to")
            }
        }
    }

    /// The broker's rule for showing an owner: the same user, or a reader of `$sys.>`.
    private func mayIdentify(owner: [UInt8], to viewer: AuthUser) -> Bool {
        if viewer.subscribe.permits(pattern: Array("$sys.>".utf8)) { return true }
        guard let session = slots.first(where: { $0?.clientID == owner }) ?? nil else { return true }
        return session.user?.name == viewer.name
    }

    /// The number of strings in the JSON array that follows `key` in `frame`.
    static func stringArray(after key: [UInt8], in frame: [UInt8]) -> Int? {
        guard let start = frame.firstRange(of: key)?.upperBound else { return nil }
        var reader = JSONReader(frame, at: start)
        var count = 0
        if reader.take("]") { return 0 }
        repeat {
            guard reader.string() != nil else { return nil }
            count += 1
        } while reader.take(",")
        return reader.take("]") ? count : nil
    }
}

/// A `channels` answer read back: `{"ok":"channels"[,"rid":R],"channels":[ENTRY…][,"next":N]}`
/// with each entry `{"ch":C,"subs":N,"owner":O|null,"owned":B,"has_value":B[,"link":L],"seq":N}`.
struct ChannelsPage {
    struct Entry {
        var name: [UInt8]
        var owner: [UInt8]?
        var owned: Bool
        var link: [UInt8]?
    }

    var entries: [Entry] = []
    var next: [UInt8]?

    /// Reads an answer; nil when it is not in that exact shape.
    init?(_ frame: [UInt8]) {
        guard let start = frame.firstRange(of: Array(#","channels":["#.utf8))?.upperBound else { return nil }
        var reader = JSONReader(frame, at: start)
        if !reader.take("]") {
            repeat {
                guard reader.take(#"{"ch":"#), let name = reader.string(),
                      reader.take(#","subs":"#), reader.integer() != nil,
                      reader.take(#","owner":"#) else { return nil }
                var owner: [UInt8]?
                if !reader.take("null") {
                    guard let named = reader.string() else { return nil }
                    owner = named
                }
                guard reader.take(#","owned":"#), let owned = reader.boolean(),
                      reader.take(#","has_value":"#), reader.boolean() != nil else { return nil }
                var link: [UInt8]?
                if reader.take(#","link":"#) {
                    guard let target = reader.string() else { return nil }
                    link = target
                }
                guard reader.take(#","seq":"#), reader.integer() != nil, reader.take("}") else { return nil }
                entries.append(Entry(name: name, owner: owner, owned: owned, link: link))
            } while reader.take(",")
            guard reader.take("]") else { return nil }
        }
        if reader.take(#","next":"#) {
            guard let next = reader.string() else { return nil }
            self.next = next
        }
        guard reader.take("}"), reader.isAtEnd else { return nil }
    }
}

/// Reads the few JSON shapes the harness checks, from a position in a frame.
struct JSONReader {
    let bytes: [UInt8]
    var position: Int

    init(_ bytes: [UInt8], at position: Int) {
        self.bytes = bytes
        self.position = position
    }

    var isAtEnd: Bool { position == bytes.count }

    /// Consumes `literal` when the bytes continue with it.
    mutating func take(_ literal: String) -> Bool {
        let wanted = Array(literal.utf8)
        guard bytes.count - position >= wanted.count, bytes[position..<(position + wanted.count)].elementsEqual(wanted) else {
            return false
        }
        position += wanted.count
        return true
    }

    mutating func boolean() -> Bool? {
        if take("true") { return true }
        if take("false") { return false }
        return nil
    }

    mutating func integer() -> Int? {
        var value = 0
        var digits = 0
        while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 {
            value = value &* 10 &+ Int(bytes[position] - 0x30)
            position += 1
            digits += 1
        }
        return digits > 0 ? value : nil
    }

    /// A JSON string's bytes, escapes decoded (`\uXXXX` outside the BMP's surrogates only).
    mutating func string() -> [UInt8]? {
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return nil }
        position += 1
        var out: [UInt8] = []
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return out
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { return nil }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard bytes.count - position >= 4,
                          let code = UInt32(String(decoding: bytes[position..<(position + 4)], as: UTF8.self), radix: 16),
                          let scalar = Unicode.Scalar(code) else { return nil }
                    position += 4
                    out.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    return nil
                }
            default:
                out.append(byte)
            }
        }
        return nil
    }
}
