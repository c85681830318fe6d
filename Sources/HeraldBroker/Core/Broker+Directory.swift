import HeraldWire

/// The directory of names `channels` lists: every channel with a record, every concrete
/// channel someone subscribed to exactly, and every linked channel, kept in byte order
/// (`SortedNames`) as those sources change, so a listing seeks to its pattern's literal
/// prefix and walks only what it lists (issue 12: it used to build and sort every name).
extension Broker {
    /// A source (record, exact subscription, link) of `name` appeared.
    func directoryAdd(_ name: [UInt8]) {
        directory.insert(name)
    }

    /// A source of `name` went; the name leaves the directory when no other source holds it.
    func directoryDrop(_ name: [UInt8]) {
        guard channels[name] == nil, !index.hasSubscriptions(withPattern: name), links[name] == nil else { return }
        directory.remove(name)
    }

    /// The bytes every name matching `pattern` starts with: its segments before the first
    /// wildcard, each followed by `.` (all of `pattern` when it is concrete).
    static func literalPrefix(of pattern: [UInt8]) -> [UInt8] {
        var prefix: [UInt8] = []
        for range in ChannelName.segments(pattern) {
            let segment = pattern[range]
            if segment.count == 1 && (segment.first == UInt8(ascii: "*") || segment.first == UInt8(ascii: ">")) {
                return prefix
            }
            prefix.append(contentsOf: segment)
            if range.upperBound < pattern.count { prefix.append(UInt8(ascii: ".")) }
        }
        return prefix
    }

    /// Walks directory names matching `pattern` (nil: every non-`$` name) in byte order,
    /// starting strictly after `after`, visiting at most `budget` names, so one call costs
    /// at most `budget` comparisons however many names the daemon holds.
    /// - Parameter body: called per matching name; returns false to stop.
    /// - Returns: the last name visited when the budget ran out with names left under the
    ///   prefix (a cursor: the next walk resumes strictly after it), else nil.
    func walkDirectory(matching pattern: [UInt8]?, after: [UInt8]?, budget: Int,
                       _ body: ([UInt8]) -> Bool) -> [UInt8]? {
        if let pattern, !PatternSet.isWildcard(pattern) {
            if directory.contains(pattern), after.map({ SortedNames.compare($0, pattern) < 0 }) ?? true {
                _ = body(pattern)
            }
            return nil
        }
        let prefix = pattern.map(Self.literalPrefix(of:)) ?? []
        var start = prefix
        var excluding = false
        if let after, SortedNames.compare(after, prefix) >= 0 {
            start = after
            excluding = true
        }
        var visited = 0
        var lastSeen: [UInt8]?
        var exhausted = false
        directory.forEach(from: start, excluding: excluding) { name in
            guard Self.hasPrefix(name, prefix) else { return false }
            if visited == budget {
                exhausted = true
                return false
            }
            visited += 1
            lastSeen = name
            let listed = pattern.map { ChannelName.matches(pattern: $0, channel: name) } ?? !ChannelName.isReserved(name)
            return !listed || body(name)
        }
        return exhausted ? lastSeen : nil
    }

    private static func hasPrefix(_ name: [UInt8], _ prefix: [UInt8]) -> Bool {
        name.count >= prefix.count && name[0..<prefix.count].elementsEqual(prefix)
    }
}
