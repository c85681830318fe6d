import HeraldWire

/// Channel patterns (or names) by segment, so a question about one channel or pattern walks
/// only the branches that can answer it: nats-server's `sublist.go` shape.
///
/// Why: a flat list of patterns makes every question cost every pattern, so one user with a
/// million wildcard subscriptions or locks would slow every publish of everyone (issue 12).
/// Here a match walks at most three children per segment (`seg`, `*`, `>`); an overlap
/// query walks the branches its own wildcards open, which is what its answer touches.
///
/// The walk only prunes: each value it finds is checked again with `ChannelName.matches` or
/// `ChannelName.overlaps` by the caller's `body` input, so the `$` rule and every edge case
/// stay defined in one place (`ChannelName`).
final class PatternTrie<Value> {
    /// One segment's node: its children by segment bytes, and the value stored at the
    /// pattern that ends here.
    final class Node {
        var children: [[UInt8]: Node] = [:]
        var value: Value?
        /// The full pattern of `value`, kept so callers can verify a candidate exactly.
        var pattern: [UInt8] = []
    }

    private let root = Node()
    /// How many patterns hold a value.
    private(set) var count = 0

    private static var star: [UInt8] { [UInt8(ascii: "*")] }
    private static var greater: [UInt8] { [UInt8(ascii: ">")] }

    /// The value stored at exactly `pattern`.
    func value(at pattern: [UInt8]) -> Value? {
        var node = root
        for segment in Self.split(pattern) {
            guard let next = node.children[segment] else { return nil }
            node = next
        }
        return node.value
    }

    /// Stores `value` at `pattern`, replacing what was there.
    func insert(_ value: Value, at pattern: [UInt8]) {
        var node = root
        for segment in Self.split(pattern) {
            if let next = node.children[segment] {
                node = next
            } else {
                let made = Node()
                node.children[segment] = made
                node = made
            }
        }
        if node.value == nil { count += 1 }
        node.value = value
        node.pattern = pattern
    }

    /// Removes the value at `pattern`, pruning nodes left empty, so the trie's size follows
    /// what it holds (a churn of patterns leaves nothing behind).
    /// - Returns: the removed value.
    @discardableResult
    func removeValue(at pattern: [UInt8]) -> Value? {
        let segments = Self.split(pattern)
        var path: [Node] = [root]
        for segment in segments {
            guard let next = path[path.count - 1].children[segment] else { return nil }
            path.append(next)
        }
        let leaf = path[path.count - 1]
        guard let removed = leaf.value else { return nil }
        leaf.value = nil
        leaf.pattern = []
        count -= 1
        var depth = segments.count
        while depth > 0, path[depth].value == nil, path[depth].children.isEmpty {
            path[depth - 1].children[segments[depth - 1]] = nil
            depth -= 1
        }
        return removed
    }

    /// Calls `body` with every stored pattern that may match the concrete `channel`
    /// (exactly those `ChannelName.matches` accepts, after the caller's check).
    func forEachMatch(of channel: [UInt8], _ body: (_ pattern: [UInt8], _ value: Value) -> Void) {
        let segments = Self.split(channel)
        match(root, segments, 0, body)
    }

    private func match(_ node: Node, _ segments: [[UInt8]], _ depth: Int,
                       _ body: (_ pattern: [UInt8], _ value: Value) -> Void) {
        guard depth < segments.count else {
            if let value = node.value { body(node.pattern, value) }
            return
        }
        if let next = node.children[segments[depth]] { match(next, segments, depth + 1, body) }
        if let next = node.children[Self.star] { match(next, segments, depth + 1, body) }
        if let tail = node.children[Self.greater], let value = tail.value { body(tail.pattern, value) }
    }

    /// Calls `body` with every stored pattern that may overlap `pattern` (some concrete
    /// channel matches both), until `body` returns false. A `*` or `>` in the query visits the
    /// whole level or subtree it opens, which is what the answer can contain: a caller that
    /// must stay cheap stops early (a `lock` on `c.*.x` beside 100,000 `c.N.*` used to walk
    /// them all, however few it could list).
    func forEachOverlap(with pattern: [UInt8], _ body: (_ pattern: [UInt8], _ value: Value) -> Bool) {
        _ = overlap(root, Self.split(pattern), 0, body)
    }

    /// - Returns: false once `body` asked to stop.
    private func overlap(_ node: Node, _ query: [[UInt8]], _ depth: Int,
                         _ body: (_ pattern: [UInt8], _ value: Value) -> Bool) -> Bool {
        guard depth < query.count else {
            if let value = node.value { return body(node.pattern, value) }
            return true
        }
        let segment = query[depth]
        if segment == Self.greater {
            for child in node.children.values where !forEachValue(below: child, body) { return false }
            return true
        }
        if segment == Self.star {
            for (key, child) in node.children {
                // A stored `>` overlaps whatever the query still holds.
                if key == Self.greater, let value = child.value {
                    if !body(child.pattern, value) { return false }
                } else if !overlap(child, query, depth + 1, body) {
                    return false
                }
            }
            return true
        }
        if let next = node.children[segment], !overlap(next, query, depth + 1, body) { return false }
        if let next = node.children[Self.star], !overlap(next, query, depth + 1, body) { return false }
        if let tail = node.children[Self.greater], let value = tail.value { return body(tail.pattern, value) }
        return true
    }

    /// Every value at or below `node`, until `body` returns false. - Returns: false then.
    private func forEachValue(below node: Node, _ body: (_ pattern: [UInt8], _ value: Value) -> Bool) -> Bool {
        if let value = node.value, !body(node.pattern, value) { return false }
        for child in node.children.values where !forEachValue(below: child, body) { return false }
        return true
    }

    /// Every value at or below `node`.
    private func forEachValue(below node: Node, _ body: (_ pattern: [UInt8], _ value: Value) -> Void) {
        if let value = node.value { body(node.pattern, value) }
        for child in node.children.values { forEachValue(below: child, body) }
    }

    /// Every stored value, in no particular order.
    func forEachValue(_ body: (_ pattern: [UInt8], _ value: Value) -> Void) {
        forEachValue(below: root, body)
    }

    /// A name or pattern's segments as separate byte arrays (trie keys).
    private static func split(_ bytes: [UInt8]) -> [[UInt8]] {
        ChannelName.segments(bytes).map { Array(bytes[$0]) }
    }
}
