import Testing
import HeraldWire

private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// The error a concrete-name check threw, or nil when it passed.
private func concreteError(_ name: String) -> HeraldError? {
    do throws(HeraldError) {
        try ChannelName.validateConcrete(bytes(name))
        return nil
    } catch {
        return error
    }
}

/// The error a pattern check threw, or nil when it passed.
private func patternError(_ pattern: String) -> HeraldError? {
    do throws(HeraldError) {
        _ = try ChannelName.validatePattern(bytes(pattern))
        return nil
    } catch {
        return error
    }
}

private let longestName = String(repeating: "a", count: 255)
private let tooLongName = String(repeating: "a", count: 256)
private let mostSegments = Array(repeating: "s", count: 32).joined(separator: ".")
private let tooManySegments = Array(repeating: "s", count: 33).joined(separator: ".")

@Test(arguments: [
    "a", "app.settings.profile", "$sys.x", "a-b_c.d:e/f", "\u{FC}ber.\u{65E5}\u{672C}", "#!~", longestName, mostSegments,
])
func validConcreteNamesAreAccepted(name: String) {
    #expect(concreteError(name) == nil)
}

@Test(arguments: [
    ("", "channel is empty"),
    (".a", #"channel ".a" has an empty segment (it starts with ".")"#),
    ("a.", #"channel "a." has an empty segment (it ends with ".")"#),
    ("a..b", #"channel "a..b" has an empty segment"#),
    (".", #"channel "." has an empty segment (it starts with ".")"#),
    ("a b", #"channel "a b" contains a space"#),
    ("a.*", #"channel "a.*" contains wildcard "*"; a concrete channel is required here"#),
    ("a.>", #"channel "a.>" contains wildcard ">"; a concrete channel is required here"#),
    ("a*", #"channel "a*" contains wildcard "*"; a concrete channel is required here"#),
    ("a\tb", "channel \"a\tb\" contains control byte 0x09"),
    ("a\u{7F}", "channel \"a\u{7F}\" contains control byte 0x7F"),
    (tooLongName, "channel is 256 bytes; the limit is 255"),
    (tooManySegments, "channel \"\(tooManySegments)\" has 33 segments; the limit is 32"),
])
func invalidConcreteNamesAreRejectedWithAMessage(name: String, message: String) {
    #expect(concreteError(name) == HeraldError(.badChannel, message))
}

@Test(arguments: ["*", ">", "a.*", "a.>", "*.b.>", "$sys.>", "a.*.c", "*.*", longestName.dropLast(2) + ".>"])
func wildcardPatternsAreAcceptedAndReportedAsWildcards(pattern: String) throws {
    #expect(try ChannelName.validatePattern(bytes(pattern)))
}

@Test(arguments: ["a", "a.b", "$sys.x", mostSegments])
func concretePatternsAreAcceptedAndReportedAsExact(pattern: String) throws {
    #expect(try !ChannelName.validatePattern(bytes(pattern)))
}

@Test(arguments: [
    ("", "pattern is empty"),
    ("a..*", #"pattern "a..*" has an empty segment"#),
    (".>", #"pattern ".>" has an empty segment (it starts with ".")"#),
    ("a.*.", #"pattern "a.*." has an empty segment (it ends with ".")"#),
    ("a *", #"pattern "a *" contains a space"#),
    ("a*", #"pattern "a*" has "*" inside a segment; a wildcard must be a whole segment"#),
    ("*a", #"pattern "*a" has "*" inside a segment; a wildcard must be a whole segment"#),
    ("a.b>", #"pattern "a.b>" has ">" inside a segment; a wildcard must be a whole segment"#),
    ("a.>>", #"pattern "a.>>" has ">" inside a segment; a wildcard must be a whole segment"#),
    ("**", #"pattern "**" has "*" inside a segment; a wildcard must be a whole segment"#),
    (">.a", #"pattern ">.a" has ">" before its last segment; ">" may only end a pattern"#),
    ("a.>.b", #"pattern "a.>.b" has ">" before its last segment; ">" may only end a pattern"#),
    (tooLongName, "pattern is 256 bytes; the limit is 255"),
    (tooManySegments, "pattern \"\(tooManySegments)\" has 33 segments; the limit is 32"),
])
func invalidPatternsAreRejectedWithAMessage(pattern: String, message: String) {
    #expect(patternError(pattern) == HeraldError(.badChannel, message))
}

@Test func reservedNamesStartWithDollar() {
    #expect(ChannelName.isReserved(bytes("$sys.x")))
    #expect(ChannelName.isReserved(bytes("$")))
    #expect(!ChannelName.isReserved(bytes("sys.$x")))
    #expect(!ChannelName.isReserved(bytes("")))
    bytes("$sys").withUnsafeBytes { #expect(ChannelName.isReserved($0)) }
}

@Test(arguments: [
    ("a.b", "a.b", true),
    ("a.b", "a.c", false),
    ("a.b", "a.b.c", false),
    ("a.b.c", "a.b", false),
    ("a.b", "a.bb", false),
    ("a.*", "a.b", true),
    ("a.*", "a.b.c", false),
    ("a.*", "a", false),
    ("*.b", "a.b", true),
    ("*.b", "a.c", false),
    ("a.*.c", "a.x.c", true),
    ("a.*.c", "a.x.d", false),
    ("*", "a", true),
    ("*", "a.b", false),
    ("a.>", "a", false),
    ("a.>", "a.b", true),
    ("a.>", "a.b.c", true),
    ("a.>", "b.c", false),
    (">", "a", true),
    (">", "a.b.c", true),
    ("*.>", "a", false),
    ("*.>", "a.b", true),
    ("*", "$sys", false),
    (">", "$sys.x", false),
    ("*.x", "$sys.x", false),
    ("$sys.>", "$sys.x", true),
    ("$sys.*", "$sys.x", true),
    ("$sys.x", "$sys.x", true),
    ("$sys.>", "$sys", false),
    ("a.$b", "a.$b", true),
    ("a.*", "a.$b", true),
])
func patternsMatchSegmentWise(pattern: String, channel: String, expected: Bool) {
    #expect(ChannelName.matches(pattern: bytes(pattern), channel: bytes(channel)) == expected)
    bytes(pattern).withUnsafeBytes { p in
        bytes(channel).withUnsafeBytes { c in
            #expect(ChannelName.matches(pattern: p, channel: c) == expected)
        }
    }
}

/// A slow, obviously correct matcher over split segments, to check the byte-walking one.
private func referenceMatch(_ pattern: String, _ channel: String) -> Bool {
    let p = pattern.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    let c = channel.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    if channel.hasPrefix("$") && (p[0] == "*" || p[0] == ">") { return false }
    for (index, segment) in p.enumerated() {
        if segment == ">" { return c.count > index }
        if index >= c.count || (segment != "*" && segment != c[index]) { return false }
    }
    return p.count == c.count
}

@Test func matchingAgreesWithAReferenceOverAllSmallNames() {
    let channelSegments = ["a", "b", "ab", "$s"]
    let patternSegments = ["a", "b", "ab", "$s", "*", ">"]
    func names(_ alphabet: [String], upTo depth: Int) -> [String] {
        var all: [String] = []
        var level = alphabet
        for _ in 0..<depth {
            all += level
            level = level.flatMap { prefix in alphabet.map { prefix + "." + $0 } }
        }
        return all
    }
    let channels = names(channelSegments, upTo: 3).filter { !$0.dropFirst().contains("$") }
    let patterns = names(patternSegments, upTo: 3).filter { !$0.dropFirst().contains("$") && patternError($0) == nil }
    #expect(patterns.count > 100)
    for pattern in patterns {
        for channel in channels {
            #expect(
                ChannelName.matches(pattern: bytes(pattern), channel: bytes(channel)) == referenceMatch(pattern, channel),
                "\(pattern) vs \(channel)")
        }
    }
}

@Test func segmentsAreTheRangesBetweenDots() {
    #expect(ChannelName.segments(bytes("a.bc.def")) == [0..<1, 2..<4, 5..<8])
    #expect(ChannelName.segments(bytes("abc")) == [0..<3])
    #expect(ChannelName.segments(bytes("")) == [])
    #expect(ChannelName.segments(bytes("$sys.>")) == [0..<4, 5..<6])
    bytes("x.y").withUnsafeBytes { #expect(ChannelName.segments($0) == [0..<1, 2..<3]) }
}
