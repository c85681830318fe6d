#if canImport(Glibc)
import Glibc
#endif

/// Names kept in byte order, in chunks of at most `chunkLimit`, so inserting, removing and
/// seeking cost O(log n + chunkLimit) and listing from a point costs what it lists.
///
/// Why not a sorted array or sorting on demand: `channels` used to build and sort every
/// name the daemon knew on each call (0.5 s with 500k channels, even for an empty answer).
/// Chunks keep an insert's copy small whatever the size; names are shared arrays, so the
/// list costs a reference per name.
struct SortedNames {
    /// Most names per chunk before it splits in two.
    static let chunkLimit = 512
    private var chunks: [[[UInt8]]] = []
    /// How many names it holds.
    private(set) var count = 0

    /// Inserts `name`. - Returns: false when it was already there.
    @discardableResult
    mutating func insert(_ name: [UInt8]) -> Bool {
        guard !chunks.isEmpty else {
            chunks = [[name]]
            count = 1
            return true
        }
        let chunk = Swift.min(chunkIndex(for: name), chunks.count - 1)
        let (position, found) = Self.search(chunks[chunk], name)
        if found { return false }
        chunks[chunk].insert(name, at: position)
        count += 1
        if chunks[chunk].count > Self.chunkLimit {
            let upper = Array(chunks[chunk][(Self.chunkLimit / 2)...])
            chunks[chunk].removeSubrange((Self.chunkLimit / 2)...)
            chunks.insert(upper, at: chunk + 1)
        }
        return true
    }

    /// Removes `name`. - Returns: false when it was not there.
    @discardableResult
    mutating func remove(_ name: [UInt8]) -> Bool {
        let chunk = chunkIndex(for: name)
        guard chunk < chunks.count else { return false }
        let (position, found) = Self.search(chunks[chunk], name)
        guard found else { return false }
        chunks[chunk].remove(at: position)
        count -= 1
        if chunks[chunk].isEmpty { chunks.remove(at: chunk) }
        return true
    }

    /// Whether `name` is held.
    func contains(_ name: [UInt8]) -> Bool {
        let chunk = chunkIndex(for: name)
        return chunk < chunks.count && Self.search(chunks[chunk], name).found
    }

    /// Calls `body` with each name not before `start` (strictly after it when `excluding`),
    /// in byte order, until `body` returns false.
    func forEach(from start: [UInt8], excluding: Bool, _ body: ([UInt8]) -> Bool) {
        var chunk = chunkIndex(for: start)
        guard chunk < chunks.count else { return }
        var (position, found) = Self.search(chunks[chunk], start)
        if found && excluding { position += 1 }
        while chunk < chunks.count {
            let names = chunks[chunk]
            while position < names.count {
                if !body(names[position]) { return }
                position += 1
            }
            chunk += 1
            position = 0
        }
    }

    /// The first chunk whose last name is not before `name` (`chunks.count` when none).
    private func chunkIndex(for name: [UInt8]) -> Int {
        var low = 0
        var high = chunks.count
        while low < high {
            let middle = (low + high) / 2
            if let last = chunks[middle].last, Self.compare(last, name) < 0 {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }

    /// Where `name` is or would go in a sorted chunk.
    private static func search(_ names: [[UInt8]], _ name: [UInt8]) -> (position: Int, found: Bool) {
        var low = 0
        var high = names.count
        while low < high {
            let middle = (low + high) / 2
            let order = compare(names[middle], name)
            if order == 0 { return (middle, true) }
            if order < 0 { low = middle + 1 } else { high = middle }
        }
        return (low, false)
    }

    /// Byte order: negative, zero or positive as `a` sorts before, with or after `b`.
    static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
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
