/// Changing a mirrored list: `append`, `assign`, `splice`, each optionally compare-and-set.
extension RemoteList {
    /// Appends an element.
    /// - Parameters:
    ///   - element: the new last element.
    ///   - ifRev: only if the list's `rev` is still this.
    /// - Returns: the new rev.
    /// - Throws: `.conflict(channel:rev:)`, `type` (the channel holds a value), `limit`, ….
    @discardableResult
    public func append(_ element: Element, ifRev: Int? = nil) async throws(HeraldClientError) -> Int {
        let value = try RawJSON(encoding: element)
        return try await write("append", ifRev: ifRev) { writer in writer.raw("value", value) }
    }

    /// Replaces the element at `index`.
    /// - Parameters:
    ///   - element: the new element.
    ///   - index: `0 ..< count`, else the daemon's `range`.
    ///   - ifRev: only if the list's `rev` is still this.
    /// - Returns: the new rev.
    /// - Throws: `.conflict(channel:rev:)`, `range`, `type`, ….
    @discardableResult
    public func assign(_ element: Element, at index: Int, ifRev: Int? = nil) async throws(HeraldClientError) -> Int {
        let value = try RawJSON(encoding: element)
        return try await write("assign", ifRev: ifRev) { writer in
            writer.int("index", index)
            writer.raw("value", value)
        }
    }

    /// Removes `remove` elements at `index` and inserts `insert` there.
    /// - Parameters:
    ///   - index: `0 ... count`, else `range`.
    ///   - remove: how many to remove (at most `count - index`).
    ///   - insert: the elements to insert.
    ///   - ifRev: only if the list's `rev` is still this.
    /// - Returns: the new rev.
    /// - Throws: `.conflict(channel:rev:)`, `range`, `type`, ….
    @discardableResult
    public func splice(at index: Int, remove: Int = 0, insert: [Element] = [], ifRev: Int? = nil) async throws(HeraldClientError) -> Int {
        let inserted = try RawJSON(encoding: insert)
        return try await write("splice", ifRev: ifRev) { writer in
            writer.int("index", index)
            writer.int("remove", remove)
            writer.raw("insert", inserted)
        }
    }

    /// Sends one list op; the mirror learns the change from its own event (in rev order).
    private func write(_ op: String, ifRev: Int?, _ fill: @escaping (inout FrameWriter) -> Void) async throws(HeraldClientError) -> Int {
        guard let client = owner else { throw .closed }
        let name = channel.name
        do {
            let frame = try await client.ask(op) { writer in
                writer.string("ch", name)
                writer.int("if_rev", ifRev)
                fill(&writer)
            }
            return frame.int("rev") ?? 0
        } catch .server(code: "conflict", _, _) {
            let now = try await client.get(rawAt: channel).rev
            throw .conflict(channel: name, rev: now)
        }
    }
}
