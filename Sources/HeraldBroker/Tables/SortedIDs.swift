/// Connection ids kept in ascending order, in chunks of at most `chunkLimit`, so inserting,
/// removing and seeking cost O(log n + chunkLimit) and a page costs what it lists
/// (`SortedNames`' layout, for integers): a presence roster of 100,000 members pages without
/// sorting and takes a join without moving the other members.
struct SortedIDs {
    /// Most ids per chunk before it splits in two.
    static let chunkLimit = 512
    private var chunks: [[Int]] = []
    /// How many ids it holds.
    private(set) var count = 0

    /// Inserts `id`. - Returns: false when it was already there.
    @discardableResult
    mutating func insert(_ id: Int) -> Bool {
        guard !chunks.isEmpty else {
            chunks = [[id]]
            count = 1
            return true
        }
        let chunk = Swift.min(chunkIndex(for: id), chunks.count - 1)
        let (position, found) = Self.search(chunks[chunk], id)
        if found { return false }
        chunks[chunk].insert(id, at: position)
        count += 1
        if chunks[chunk].count > Self.chunkLimit {
            let upper = Array(chunks[chunk][(Self.chunkLimit / 2)...])
            chunks[chunk].removeSubrange((Self.chunkLimit / 2)...)
            chunks.insert(upper, at: chunk + 1)
        }
        return true
    }

    /// Removes `id`. - Returns: false when it was not there.
    @discardableResult
    mutating func remove(_ id: Int) -> Bool {
        let chunk = chunkIndex(for: id)
        guard chunk < chunks.count else { return false }
        let (position, found) = Self.search(chunks[chunk], id)
        guard found else { return false }
        chunks[chunk].remove(at: position)
        count -= 1
        if chunks[chunk].isEmpty { chunks.remove(at: chunk) }
        return true
    }

    /// At most `limit` ids above `after`, ascending, and whether more follow.
    func page(after: Int, limit: Int) -> (ids: [Int], more: Bool) {
        var ids: [Int] = []
        var chunk = chunkIndex(for: after)
        guard chunk < chunks.count else { return ([], false) }
        var (position, found) = Self.search(chunks[chunk], after)
        if found { position += 1 }
        while chunk < chunks.count {
            let values = chunks[chunk]
            while position < values.count {
                if ids.count == limit { return (ids, true) }
                ids.append(values[position])
                position += 1
            }
            chunk += 1
            position = 0
        }
        return (ids, false)
    }

    /// The first chunk whose last id is not below `id` (`chunks.count` when none).
    private func chunkIndex(for id: Int) -> Int {
        var low = 0
        var high = chunks.count
        while low < high {
            let middle = (low + high) / 2
            if let last = chunks[middle].last, last < id { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Where `id` is or would go in `values`.
    private static func search(_ values: [Int], _ id: Int) -> (position: Int, found: Bool) {
        var low = 0
        var high = values.count
        while low < high {
            let middle = (low + high) / 2
            if values[middle] < id { low = middle + 1 } else { high = middle }
        }
        return (low, low < values.count && values[low] == id)
    }
}
