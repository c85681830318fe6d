/// The publishes kept until the daemon answers them (``OfflinePublishing``), by serial number;
/// bounded by count and bytes.
struct Outbox {
    /// One kept publish.
    struct Entry {
        /// The idempotency `id`, the same on every send.
        let id: String
        let channel: String
        let data: RawJSON?
        /// What it counts against `maxBytes`.
        let bytes: Int
        /// Called once, when the daemon answered it (or the client closed).
        let complete: @Sendable (Result<ServerFrame, HeraldClientError>) -> Void
    }

    private(set) var entries: [Int: Entry] = [:]
    private(set) var bytes = 0
    private var nextSerial = 1

    /// Keeps a publish.
    /// - Returns: its serial, or nil when it would pass `bound` (nothing is kept then).
    mutating func add(idPrefix: String, channel: String, data: RawJSON?, bound: OfflinePublishing,
                      complete: @escaping @Sendable (Result<ServerFrame, HeraldClientError>) -> Void) -> Int? {
        let serial = nextSerial
        let id = idPrefix + String(serial, radix: 36)
        let size = channel.utf8.count + id.utf8.count + (data?.bytes.count ?? 0)
        guard entries.count < bound.maxCount, bytes + size <= bound.maxBytes else { return nil }
        nextSerial += 1
        entries[serial] = Entry(id: id, channel: channel, data: data, bytes: size, complete: complete)
        bytes += size
        return serial
    }

    /// Forgets an answered publish.
    mutating func remove(_ serial: Int) -> Entry? {
        guard let entry = entries.removeValue(forKey: serial) else { return nil }
        bytes -= entry.bytes
        return entry
    }

    /// Forgets everything (the client closed).
    mutating func removeAll() -> [Entry] {
        defer {
            entries = [:]
            bytes = 0
        }
        return entries.keys.sorted().compactMap { entries[$0] }
    }

    /// The serials in the order the app published.
    var serialsInOrder: [Int] { entries.keys.sorted() }
}
