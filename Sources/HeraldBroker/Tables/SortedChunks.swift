#if canImport(Glibc)
import Glibc
#endif

/// A key `SortedChunks` can keep in order: negative, zero or positive as `a` sorts before,
/// with or after `b`.
protocol ChunkOrdered {
    static func order(_ a: Self, _ b: Self) -> Int
}

extension Int: ChunkOrdered {
    /// Numeric order.
    static func order(_ a: Int, _ b: Int) -> Int { a < b ? -1 : (a == b ? 0 : 1) }
}

extension Array: ChunkOrdered where Element == UInt8 {
    /// Byte order (a prefix first).
    static func order(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in
                let shorter = Swift.min(x.count, y.count)
                if shorter > 0, let p = x.baseAddress, let q = y.baseAddress {
                    let order = memcmp(p, q, shorter)
                    if order != 0 { return Int(order) }
                }
                return x.count - y.count
            }
        }
    }
}

/// Keys kept in order, in chunks of at most `chunkLimit`, so inserting, removing and seeking
/// cost O(log n + chunkLimit) and listing from a point costs what it lists.
///
/// Why not a sorted array or sorting on demand: `channels` used to build and sort every
/// name the daemon knew on each call (0.5 s with 500k channels, even for an empty answer).
/// Chunks keep an insert's copy small whatever the size. Used for the channel directory
/// (`SortedNames`, names are shared arrays, so it costs a reference per name), for presence
/// rosters and for the connections `clients` pages through (`SortedIDs`).
struct SortedChunks<Key: ChunkOrdered> {
    /// Most keys per chunk before it splits in two.
    static var chunkLimit: Int { 512 }
    private var chunks: [[Key]] = []
    /// How many keys it holds.
    private(set) var count = 0

    /// Inserts `key`. - Returns: false when it was already there.
    @discardableResult
    mutating func insert(_ key: Key) -> Bool {
        guard !chunks.isEmpty else {
            chunks = [[key]]
            count = 1
            return true
        }
        let chunk = Swift.min(chunkIndex(for: key), chunks.count - 1)
        let (position, found) = Self.search(chunks[chunk], key)
        if found { return false }
        chunks[chunk].insert(key, at: position)
        count += 1
        if chunks[chunk].count > Self.chunkLimit {
            let upper = Array(chunks[chunk][(Self.chunkLimit / 2)...])
            chunks[chunk].removeSubrange((Self.chunkLimit / 2)...)
            chunks.insert(upper, at: chunk + 1)
        }
        return true
    }

    /// Removes `key`. - Returns: false when it was not there.
    @discardableResult
    mutating func remove(_ key: Key) -> Bool {
        let chunk = chunkIndex(for: key)
        guard chunk < chunks.count else { return false }
        let (position, found) = Self.search(chunks[chunk], key)
        guard found else { return false }
        chunks[chunk].remove(at: position)
        count -= 1
        if chunks[chunk].isEmpty { chunks.remove(at: chunk) }
        return true
    }

    /// Whether `key` is held.
    func contains(_ key: Key) -> Bool {
        let chunk = chunkIndex(for: key)
        return chunk < chunks.count && Self.search(chunks[chunk], key).found
    }

    /// Calls `body` with each key not before `start` (strictly after it when `excluding`), in
    /// order, until `body` returns false.
    func forEach(from start: Key, excluding: Bool, _ body: (Key) -> Bool) {
        var chunk = chunkIndex(for: start)
        guard chunk < chunks.count else { return }
        var (position, found) = Self.search(chunks[chunk], start)
        if found && excluding { position += 1 }
        while chunk < chunks.count {
            let keys = chunks[chunk]
            while position < keys.count {
                if !body(keys[position]) { return }
                position += 1
            }
            chunk += 1
            position = 0
        }
    }

    /// At most `limit` keys after `after`, in order, and whether more follow.
    func page(after: Key, limit: Int) -> (ids: [Key], more: Bool) {
        var keys: [Key] = []
        var more = false
        forEach(from: after, excluding: true) { key in
            guard keys.count < limit else {
                more = true
                return false
            }
            keys.append(key)
            return true
        }
        return (keys, more)
    }

    /// The first chunk whose last key is not before `key` (`chunks.count` when none).
    private func chunkIndex(for key: Key) -> Int {
        var low = 0
        var high = chunks.count
        while low < high {
            let middle = (low + high) / 2
            if let last = chunks[middle].last, Key.order(last, key) < 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Where `key` is or would go in a sorted chunk.
    private static func search(_ keys: [Key], _ key: Key) -> (position: Int, found: Bool) {
        var low = 0
        var high = keys.count
        while low < high {
            let middle = (low + high) / 2
            let order = Key.order(keys[middle], key)
            if order == 0 { return (middle, true) }
            if order < 0 { low = middle + 1 } else { high = middle }
        }
        return (low, false)
    }
}

/// Channel names in byte order (the directory `channels` walks).
typealias SortedNames = SortedChunks<[UInt8]>
/// Connection ids in order (presence rosters, `clients`).
typealias SortedIDs = SortedChunks<Int>

extension SortedChunks where Key == [UInt8] {
    /// Byte order: negative, zero or positive as `a` sorts before, with or after `b`.
    static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int { Key.order(a, b) }
}
